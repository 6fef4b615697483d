// PointwiseConv (src/backend/kernels/pointwise.h) on raw buffers: a
// PointwiseTester fills random pixels [rows, in_channels], oihw weights
// packed in 64-channel panels (the last zero-padded), bias and residual, runs
// the 1x1 convolution and compares every output with the sum in double.
// Tolerance: 1e-5 of the sum of the magnitudes of the terms (a missing or
// doubled product of depth up to 4096 is some 1e-4 of it).
//
// PointwiseConv has one path, AVX-512; HavePointwiseConv() says whether the
// lowering uses it (CpuIsa() AVX-512), but the code runs wherever the
// hardware has avx512f, so it is tested there under every ISA cap.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/pointwise.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

// oihw [out, in] as PointwiseConv reads it: [ceil(out / 64)][in][64], zeros
// past `out` in the last panel.
std::vector<float> PackPanels(const std::vector<float>& w, std::int64_t out, std::int64_t in) {
  const std::int64_t panels = (out + kPointwisePanel - 1) / kPointwisePanel;
  std::vector<float> packed(Z(panels * in * kPointwisePanel), 0.f);
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i)
      packed[Z((o / kPointwisePanel * in + i) * kPointwisePanel + o % kPointwisePanel)] = w[Z(o * in + i)];
  return packed;
}

class PointwiseTester {
 public:
  PointwiseTester& Rows(std::int64_t v) { rows_ = v; return *this; }
  PointwiseTester& InChannels(std::int64_t v) { in_ = v; return *this; }
  PointwiseTester& OutChannels(std::int64_t v) { out_ = v; return *this; }  ///< a multiple of 16
  PointwiseTester& Epilogue(std::vector<PointwiseOp> v) { epilogue_ = std::move(v); return *this; }
  PointwiseTester& AddendInPlace(bool v) { in_place_ = v; return *this; }
  /// The next convolution's first panel to prefetch (PointwiseNext): the result must not change.
  PointwiseTester& PrefetchNext(bool v) { next_ = v; return *this; }

  void Test() const {
    if (test::SkippedWithout(test::CpuRunsAvx512(), "no AVX-512 on this CPU: PointwiseConv not tested")) return;
    INFO("rows " << rows_ << " in " << in_ << " out " << out_ << " epilogue " << test::Describe(epilogue_)
                 << " in place " << in_place_ << " prefetch next " << next_);
    const std::vector<float> x = test::RandomFloats(Z(rows_ * in_), 31), w = test::RandomFloats(Z(out_ * in_), 32);
    const std::vector<float> bias = test::RandomFloats(Z(out_), 33), addend = test::RandomFloats(Z(rows_ * out_), 34);
    std::vector<test::Expected> want(Z(rows_ * out_));
    for (std::int64_t m = 0; m < rows_; ++m)
      for (std::int64_t o = 0; o < out_; ++o) {
        test::Expected e{bias[Z(o)], std::abs(bias[Z(o)])};
        for (std::int64_t i = 0; i < in_; ++i) {
          const double term = double{x[Z(m * in_ + i)]} * w[Z(o * in_ + i)];
          e.value += term, e.magnitude += std::abs(term);
        }
        want[Z(m * out_ + o)] = test::ApplyEpilogue(e, epilogue_, addend[Z(m * out_ + o)]);
      }
    const std::vector<float> packed = PackPanels(w, out_, in_);
    const std::vector<float> next_panel = test::RandomFloats(Z(48 * kPointwisePanel), 35);
    test::Guarded y(Z(rows_ * out_));
    if (in_place_) std::copy(addend.begin(), addend.end(), y.get());
    PointwiseConv(x.data(), packed.data(), bias.data(), in_place_ ? y.get() : addend.data(), y.get(),
                  {rows_, in_, out_}, epilogue_, next_ ? PointwiseNext{next_panel.data(), 48} : PointwiseNext{});
    test::CheckAll(y.get(), want, 1e-5);
    CHECK(y.GuardIntact());
  }

 private:
  std::int64_t rows_ = 7, in_ = 24, out_ = 64;
  bool in_place_ = false, next_ = false;
  std::vector<PointwiseOp> epilogue_;
};

}  // namespace

TEST_CASE("PointwiseConv: rows around the 12-, 8- and 6-row register blocks and the threads' 12-row shares",
          "[kernels][pointwise][needs_avx512]") {
  for (std::int64_t rows : {1, 2, 5, 6, 7, 8, 11, 12, 13, 25, 49, 196, 256})
    for (std::int64_t out : {16, 48, 64}) PointwiseTester().Rows(rows).OutChannels(out).Test();
}

TEST_CASE("PointwiseConv: panels of 1 to 4 vectors, several panels, the last one partial", "[kernels][pointwise][needs_avx512]") {
  for (std::int64_t out : {16, 32, 48, 64, 80, 112, 128, 144, 320}) PointwiseTester().Rows(14).OutChannels(out).Test();
}

TEST_CASE("PointwiseConv: depths of one, odd, and large", "[kernels][pointwise][needs_avx512]") {
  for (std::int64_t in : {1, 3, 17, 96, 320, 1280}) PointwiseTester().Rows(13).InChannels(in).OutChannels(80).Test();
}

TEST_CASE("PointwiseConv: every epilogue in order, the residual read from y itself", "[kernels][pointwise][needs_avx512]") {
  for (const auto& epilogue : test::EpiloguesToTest(/*add_first=*/false))
    for (bool in_place : {false, true})
      PointwiseTester().Rows(19).OutChannels(112).Epilogue(epilogue).AddendInPlace(in_place).Test();
}

TEST_CASE("PointwiseConv: prefetching the next convolution's first panel leaves the result as it is",
          "[kernels][pointwise][needs_avx512]") {
  for (std::int64_t out : {64, 80}) PointwiseTester().Rows(49).OutChannels(out).PrefetchNext(true).Test();
}

TEST_CASE("HavePointwiseConv: the lowering takes PointwiseConv on AVX-512 only", "[kernels][pointwise]") {
  CHECK(HavePointwiseConv() == (CpuIsa() == Isa::kAvx512));
}
