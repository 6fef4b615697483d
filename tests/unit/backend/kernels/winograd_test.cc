// Winograd F(2x2, 3x3) (src/backend/kernels/winograd.h) on raw buffers: the
// packed weights U = G g G^T against G g G^T in double, and a WinogradTester
// that runs a 3x3 convolution (stride 1, pads 1) on a random nChw8c image and
// compares every output with the direct convolution in double. Tolerance:
// 1e-4 of the sum of the magnitudes of the direct convolution's terms (the
// transforms add and subtract up to 16 values before and after the products;
// a missing tap of 9 C is some 1e-3 of it).
//
// The convolution has one path (AVX2 with FMA, over gemm.h's Gemm), tested
// wherever the hardware runs it, whatever ISA cap is set.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "backend/kernels/gemm.h"
#include "backend/kernels/winograd.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

class WinogradTester {
 public:
  WinogradTester& Channels(std::int64_t v) { c_ = v; return *this; }     ///< C, a multiple of 8
  WinogradTester& OutChannels(std::int64_t v) { k_ = v; return *this; }  ///< K, a multiple of 16
  WinogradTester& Height(std::int64_t v) { h_ = v; return *this; }
  WinogradTester& Width(std::int64_t v) { w_ = v; return *this; }
  WinogradTester& Bias(bool v) { bias_ = v; return *this; }
  WinogradTester& Epilogue(std::vector<PointwiseOp> v) { epilogue_ = std::move(v); return *this; }
  WinogradTester& AddendInPlace(bool v) { in_place_ = v; return *this; }
  /// Scratch for this many threads (WinogradScratchBytes); 0: the OpenMP maximum.
  WinogradTester& ScratchThreads(int v) { scratch_threads_ = v; return *this; }

  void Test() const {
    if (test::SkippedWithout(test::CpuRunsAvx2(), "no AVX2 with FMA on this CPU: WinogradConv3x3 not tested")) return;
    INFO("C " << c_ << " K " << k_ << " " << h_ << "x" << w_ << " bias " << bias_ << " epilogue "
              << test::Describe(epilogue_) << " in place " << in_place_ << " scratch threads " << scratch_threads_);
    const std::int64_t plane = h_ * w_;
    const std::vector<float> x = test::RandomFloats(Z(c_ * plane), 21);  // nChw8c [C / 8][H][W][8]
    const std::vector<float> wt = test::RandomFloats(Z(k_ * c_ * 9), 22);  // oihw [K, C, 3, 3]
    const std::vector<float> bias = test::RandomFloats(Z(k_), 23), addend = test::RandomFloats(Z(k_ * plane), 24);
    const auto at = [&](std::int64_t ch, std::int64_t y, std::int64_t x_) {  // nChw8c
      return Z(((ch / 8 * h_ + y) * w_ + x_) * 8 + ch % 8);
    };
    std::vector<test::Expected> want(Z(k_ * plane));
    for (std::int64_t k = 0; k < k_; ++k)
      for (std::int64_t oy = 0; oy < h_; ++oy)
        for (std::int64_t ox = 0; ox < w_; ++ox) {
          test::Expected e{bias_ ? bias[Z(k)] : 0.0, bias_ ? std::abs(bias[Z(k)]) : 0.0};
          for (std::int64_t c = 0; c < c_; ++c)
            for (std::int64_t i = 0; i < 3; ++i)
              for (std::int64_t j = 0; j < 3; ++j) {
                const std::int64_t iy = oy - 1 + i, ix = ox - 1 + j;
                if (iy < 0 || iy >= h_ || ix < 0 || ix >= w_) continue;
                const double term = double{x[at(c, iy, ix)]} * wt[Z((k * c_ + c) * 9 + i * 3 + j)];
                e.value += term, e.magnitude += std::abs(term);
              }
          want[at(k, oy, ox)] = test::ApplyEpilogue(e, epilogue_, addend[at(k, oy, ox)]);
        }

    const WinogradShape shape{c_, k_, h_, w_};
    const std::vector<float> u = PackWinogradWeights(wt.data(), k_, c_);
    const int threads = scratch_threads_ > 0 ? scratch_threads_ : omp_get_max_threads();
    const std::int64_t bytes = WinogradScratchBytes(shape, threads);
    REQUIRE(bytes >= WinogradScratchBytes(shape, 1));
    std::vector<float> scratch(Z(bytes / 4));
    test::Guarded y(Z(k_ * plane));
    if (in_place_) std::copy(addend.begin(), addend.end(), y.get());
    WinogradConv3x3(x.data(), u.data(), bias_ ? bias.data() : nullptr, in_place_ ? y.get() : addend.data(), y.get(),
                    shape, epilogue_, scratch.data(), bytes);
    test::CheckAll(y.get(), want, 1e-4);
    CHECK(y.GuardIntact());
  }

 private:
  std::int64_t c_ = 8, k_ = 16, h_ = 5, w_ = 5;
  bool bias_ = true, in_place_ = false;
  int scratch_threads_ = 0;
  std::vector<PointwiseOp> epilogue_;
};

}  // namespace

TEST_CASE("PackWinogradWeights: U = G g G^T as 16 matrices [C, K] in Gemm's 16-column panels", "[kernels][winograd]") {
  const std::int64_t k_count = 32, c_count = 8;
  const std::vector<float> w = test::RandomFloats(Z(k_count * c_count * 9), 25);
  const std::vector<float> u = PackWinogradWeights(w.data(), k_count, c_count);
  REQUIRE(u.size() == Z(16 * c_count * k_count));
  const double g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};  // Lavin & Gray's G
  std::vector<test::Expected> want(u.size());
  for (std::int64_t k = 0; k < k_count; ++k)
    for (std::int64_t c = 0; c < c_count; ++c)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          test::Expected e;  // sum over a, b of G[i][a] g[a][b] G[j][b]
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
              const double term = g[i][a] * w[Z((k * c_count + c) * 9 + a * 3 + b)] * g[j][b];
              e.value += term, e.magnitude += std::abs(term);
            }
          want[Z((i * 4 + j) * c_count * k_count + (k / kGemmPanel * c_count + c) * kGemmPanel + k % kGemmPanel)] = e;
        }
  test::CheckAll(u.data(), want, 1e-7);
}

TEST_CASE("WinogradConv3x3: maps of odd and even sizes, one pixel, tiles cut at the edges", "[kernels][winograd][needs_avx2]") {
  for (std::int64_t h : {1, 2, 3, 4, 7})
    for (std::int64_t w : {1, 2, 5, 8}) WinogradTester().Height(h).Width(w).Test();
}

TEST_CASE("WinogradConv3x3: channel counts, one block of tiles and several, over threads", "[kernels][winograd][needs_avx2]") {
  for (std::int64_t c : {8, 16, 64})
    for (std::int64_t k : {16, 32, 64}) WinogradTester().Channels(c).OutChannels(k).Height(9).Width(11).Test();
  // C 8, K 16 on 40x40: 400 tiles, blocks of 341 (winograd.cc, TileBlock): two blocks.
  WinogradTester().Height(40).Width(40).Test();
  WinogradTester().Height(40).Width(40).ScratchThreads(1).Test();  // room for one block at a time
  WinogradTester().Channels(128).OutChannels(128).Height(28).Width(28).Test();  // one block spread over threads
}

TEST_CASE("WinogradConv3x3: every epilogue with the residual first, with and without bias, in place",
          "[kernels][winograd][needs_avx2]") {
  for (const auto& epilogue : test::EpiloguesToTest(/*add_first=*/true))
    for (bool bias : {true, false})
      for (bool in_place : {false, true}) {
        if (in_place && (epilogue.empty() || epilogue[0].kind != PointwiseOp::Kind::kAdd)) continue;
        WinogradTester().Channels(16).OutChannels(32).Height(7).Width(6).Bias(bias).Epilogue(epilogue)
            .AddendInPlace(in_place).Test();
      }
}

TEST_CASE("WinogradConv3x3: too little scratch for one block is a logic_error", "[kernels][winograd]") {
  const WinogradShape shape{8, 16, 4, 4};
  const std::vector<float> x(8 * 16), w(16 * 8 * 9), u = PackWinogradWeights(w.data(), 16, 8);
  std::vector<float> y(16 * 16), scratch(1);
  CHECK_THROWS_AS(WinogradConv3x3(x.data(), u.data(), nullptr, nullptr, y.data(), shape, {}, scratch.data(), 4),
                  std::logic_error);
}
