// Our AVX2 GEMM (src/backend/kernels/gemm.h) on raw buffers: a GemmTester
// fills random operands, packs the weights into 16-column panels, runs Gemm
// and compares every element of c with the product computed in double.
// Tolerance: 1e-5 of the sum of the magnitudes of the terms of each element
// (float's epsilon is 1.2e-7; a missing or doubled product of depth up to
// 4096 is some 1e-4 of it).
//
// Gemm has one path, AVX2 with FMA; HaveGemm() says whether the lowering
// uses it (AVX2 but not AVX-512 CPUs), but the code runs wherever the
// hardware has AVX2, so it is tested there under every ISA cap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/gemm.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

// The convolution whose im2col rows are the product's rows (GemmConvRows):
// square kernel, stride and pads on both sides.
struct ConvRows {
  std::int64_t channels = 8, in_h = 5, in_w = 5, kernel = 3, stride = 1, pad = 1;
  bool scale = false;  ///< a per-channel channel_scale
  std::int64_t out_h() const { return (in_h + 2 * pad - kernel) / stride + 1; }
  std::int64_t out_w() const { return (in_w + 2 * pad - kernel) / stride + 1; }
};

class GemmTester {
 public:
  GemmTester& Rows(std::int64_t v) { rows_ = v; return *this; }
  GemmTester& Depth(std::int64_t v) { depth_ = v; return *this; }
  GemmTester& Cols(std::int64_t v) { cols_ = v; return *this; }
  GemmTester& Bias(bool v) { bias_ = v; return *this; }
  GemmTester& Epilogue(std::vector<PointwiseOp> v) { epilogue_ = std::move(v); return *this; }
  GemmTester& AddendInPlace(bool v) { in_place_ = v; return *this; }  ///< kAdd's addend is c itself
  GemmTester& BlockedC(bool v) { blocked_c_ = v; return *this; }
  /// a is the im2col rows of `conv` over an nChw8c image (rows and depth follow).
  GemmTester& Conv(const ConvRows& v) {
    conv_ = v, use_conv_ = true;
    rows_ = v.out_h() * v.out_w(), depth_ = v.kernel * v.kernel * v.channels;
    return *this;
  }

  void Test() const {
    if (test::SkippedWithout(test::CpuRunsAvx2(), "no AVX2 with FMA on this CPU: Gemm not tested")) return;
    INFO("rows " << rows_ << " depth " << depth_ << " cols " << cols_ << " bias " << bias_ << " epilogue "
                 << test::Describe(epilogue_) << " in place " << in_place_ << " blocked c " << blocked_c_ << " conv "
                 << use_conv_);
    const auto n = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    // a: row-major [rows, depth], or the convolution's nChw8c image, its
    // padding lanes NaN (never read).
    const std::int64_t blocks = (conv_.channels + 7) / 8;
    std::vector<float> a = test::RandomFloats(n(use_conv_ ? blocks * conv_.in_h * conv_.in_w * 8 : rows_ * depth_), 1);
    if (use_conv_)
      for (std::size_t i = 0; i < a.size(); ++i)
        if (static_cast<std::int64_t>(i) / (conv_.in_h * conv_.in_w * 8) * 8 + static_cast<std::int64_t>(i % 8) >=
            conv_.channels)
          a[i] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> scale = test::RandomFloats(n(conv_.channels), 2, 0.5f, 2.f);
    const std::vector<float> w = test::RandomFloats(n(depth_ * cols_), 3);  // logical [depth, cols]
    const std::vector<float> bias = test::RandomFloats(n(cols_), 4);
    const std::vector<float> addend = test::RandomFloats(n(rows_ * cols_), 5);  // in c's layout
    std::vector<float> packed(w.size());  // [cols / 16][depth][16]
    for (std::int64_t k = 0; k < depth_; ++k)
      for (std::int64_t c = 0; c < cols_; ++c)
        packed[n((c / kGemmPanel * depth_ + k) * kGemmPanel + c % kGemmPanel)] = w[n(k * cols_ + c)];

    // c's index of (m, c): row-major, or nChw8c [cols / 8][rows][8].
    const auto at = [&](std::int64_t m, std::int64_t c) {
      return n(blocked_c_ ? (c / 8 * rows_ + m) * 8 + c % 8 : m * cols_ + c);
    };
    const auto a_at = [&](std::int64_t m, std::int64_t k) -> double {
      if (!use_conv_) return a[n(m * depth_ + k)];
      const std::int64_t tap = k / conv_.channels, ch = k % conv_.channels;
      const std::int64_t ih = m / conv_.out_w() * conv_.stride - conv_.pad + tap / conv_.kernel;
      const std::int64_t iw = m % conv_.out_w() * conv_.stride - conv_.pad + tap % conv_.kernel;
      if (ih < 0 || ih >= conv_.in_h || iw < 0 || iw >= conv_.in_w) return 0;
      return double{a[n(((ch / 8 * conv_.in_h + ih) * conv_.in_w + iw) * 8 + ch % 8)]} *
             (conv_.scale ? scale[n(ch)] : 1.f);
    };
    std::vector<test::Expected> want(n(rows_ * cols_));
    for (std::int64_t m = 0; m < rows_; ++m)
      for (std::int64_t c = 0; c < cols_; ++c) {
        test::Expected e{bias_ ? bias[n(c)] : 0.0, bias_ ? std::abs(bias[n(c)]) : 0.0};
        for (std::int64_t k = 0; k < depth_; ++k) {
          const double term = a_at(m, k) * w[n(k * cols_ + c)];
          e.value += term, e.magnitude += std::abs(term);
        }
        want[at(m, c)] = test::ApplyEpilogue(e, epilogue_, addend[at(m, c)]);
      }

    test::Guarded out(n(rows_ * cols_));
    if (in_place_) std::copy(addend.begin(), addend.end(), out.get());
    GemmConvRows rows;
    rows.channels = conv_.channels, rows.in_h = conv_.in_h, rows.in_w = conv_.in_w, rows.out_w = conv_.out_w();
    rows.kernel_h = rows.kernel_w = conv_.kernel, rows.stride_h = rows.stride_w = conv_.stride;
    rows.pad_top = rows.pad_left = conv_.pad;
    rows.channel_scale = conv_.scale ? scale.data() : nullptr;
    GemmLayout layout;
    layout.conv = use_conv_ ? &rows : nullptr;
    layout.blocked_c = blocked_c_;
    Gemm(a.data(), packed.data(), bias_ ? bias.data() : nullptr, in_place_ ? out.get() : addend.data(), out.get(),
         {rows_, depth_, cols_}, epilogue_, layout);
    test::CheckAll(out.get(), want, 1e-5);
    CHECK(out.GuardIntact());
  }

 private:
  std::int64_t rows_ = 7, depth_ = 9, cols_ = kGemmPanel;
  bool bias_ = true, in_place_ = false, blocked_c_ = false, use_conv_ = false;
  std::vector<PointwiseOp> epilogue_;
  ConvRows conv_;
};

}  // namespace

TEST_CASE("Gemm: rows around the 6-row micro-kernel and the 120-row block", "[kernels][gemm][needs_avx2]") {
  for (std::int64_t rows : {1, 2, 5, 6, 7, 11, 12, 13, 49, 119, 120, 121, 241})
    for (std::int64_t cols : {16, 48}) GemmTester().Rows(rows).Depth(37).Cols(cols).Test();
}

TEST_CASE("Gemm: depths of one, not a multiple of 8, one block of 512 and several", "[kernels][gemm][needs_avx2]") {
  for (std::int64_t depth : {1, 3, 8, 17, 511, 512, 513, 768, 1100, 2100})
    GemmTester().Rows(13).Depth(depth).Cols(32).Epilogue({{PointwiseOp::Kind::kAdd}}).Test();
}

TEST_CASE("Gemm: one column panel, several, and enough work to split them over threads", "[kernels][gemm][needs_avx2]") {
  for (std::int64_t cols : {16, 32, 80, 256}) GemmTester().Rows(97).Depth(130).Cols(cols).Test();
  GemmTester().Rows(97).Depth(130).Cols(256).Epilogue({{PointwiseOp::Kind::kAdd}}).AddendInPlace(true).Test();
}

TEST_CASE("Gemm: every epilogue, with and without bias, the residual read from c itself", "[kernels][gemm][needs_avx2]") {
  for (const auto& epilogue : test::EpiloguesToTest(/*add_first=*/true))
    for (bool bias : {true, false})
      for (bool in_place : {false, true}) {
        if (in_place && (epilogue.empty() || epilogue[0].kind != PointwiseOp::Kind::kAdd)) continue;
        GemmTester().Rows(19).Depth(600).Cols(32).Bias(bias).Epilogue(epilogue).AddendInPlace(in_place).Test();
      }
}

TEST_CASE("Gemm: c and the residual channel-blocked nChw8c", "[kernels][gemm][needs_avx2]") {
  for (std::int64_t rows : {1, 7, 49, 130})
    GemmTester().Rows(rows).Depth(24).Cols(48).BlockedC(true).Epilogue({{PointwiseOp::Kind::kAdd}, {}}).Test();
  GemmTester().Rows(49).Depth(24).Cols(32).BlockedC(true).AddendInPlace(true).Epilogue(
      {{PointwiseOp::Kind::kAdd}, {PointwiseOp::Kind::kClamp, 0, 6}}).Test();
}

TEST_CASE("Gemm: a convolution's im2col rows, whole 8-channel blocks (vector packing) or not", "[kernels][gemm][needs_avx2]") {
  for (std::int64_t channels : {8, 16, 3, 12, 20})
    for (std::int64_t kernel : {1, 3})
      for (std::int64_t stride : {1, 2}) {
        ConvRows conv;
        conv.channels = channels, conv.in_h = 7, conv.in_w = 9, conv.kernel = kernel, conv.stride = stride;
        conv.pad = kernel / 2;
        GemmTester().Conv(conv).Cols(32).Test();
        conv.scale = true;  // a squeeze-and-excitation gate on the input
        GemmTester().Conv(conv).Cols(16).BlockedC(true).Epilogue({{PointwiseOp::Kind::kAdd}}).Test();
      }
  ConvRows deep;  // a 14x14 map of 256 channels: two depth blocks, several row blocks, threads
  deep.channels = 256, deep.in_h = deep.in_w = 14;
  GemmTester().Conv(deep).Cols(64).BlockedC(true).Test();
  ConvRows asymmetric;  // a pad that leaves whole rows of taps outside
  asymmetric.channels = 16, asymmetric.in_h = 2, asymmetric.in_w = 1, asymmetric.kernel = 3, asymmetric.pad = 2;
  GemmTester().Conv(asymmetric).Cols(16).Test();
}

TEST_CASE("HaveGemm: the lowering takes Gemm on AVX2 CPUs, not on AVX-512 ones or without AVX2", "[kernels][gemm]") {
  CHECK(HaveGemm() == (CpuIsa() == Isa::kAvx2));
}
