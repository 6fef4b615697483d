// 3x3 convolutions as Winograd's F(2x2, 3x3) over our own GEMM
// (src/backend/lower/own_kernels/winograd.cc, src/backend/kernels/winograd.h) on AVX2: odd
// map sizes (tiles cut at the edges), a folded BatchNormalization, a residual
// Add with Relu, Clip, and the convolutions it does not take. Numbers are
// checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::DimsText;
using test::Floats;
using test::HaveGemmKernel;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("a 3x3 convolution of at least 64 channels runs as Winograd F(2x2, 3x3): edges, BN, residual, Clip",
          "[winograd]") {
  // x [1, 16, H, W] -> a = Conv 1x1 (16 -> C): oneDNN's, nChw8c on AVX2.
  // b = Conv 3x3 of a, pads 1, with bias, then BatchNormalization and either
  // the residual a and Relu (C = K) or Clip [0, 6].
  //   64 -> 64 at 9x7: tiles of 2x2 cut at the bottom and right edges;
  //   64 -> 64 at 24x22: 132 tiles in 3 blocks (backend/kernels/winograd.cc,
  //     TileBlock), over the OpenMP threads;
  //   72 -> 96 at 8x8: C a multiple of 8 but not of 16, whole tiles;
  //   64 -> 64 stride 2 and 32 -> 64: not Winograd's (our GEMM or oneDNN).
  struct Case {
    std::int64_t c, out, h, w, stride;
    bool residual;
    bool winograd;
  };
  for (const Case& k : {Case{64, 64, 9, 7, 1, true, true}, Case{64, 64, 24, 22, 1, true, true},
                        Case{72, 96, 8, 8, 1, false, true},
                        Case{64, 64, 8, 8, 2, false, false}, Case{32, 64, 8, 8, 1, false, false}}) {
    INFO(k.c << " -> " << k.out << " at " << k.h << "x" << k.w << ", stride " << k.stride);
    const std::int64_t oh = (k.h - 1) / k.stride + 1, ow = (k.w - 1) / k.stride + 1;
    Tensor x = TensorFrom({1, 16, k.h, k.w}, Wave);
    const std::vector<float> w0 = Floats(static_cast<std::size_t>(k.c * 16), 0.25f, 1),
                             w1 = Floats(static_cast<std::size_t>(k.out * k.c * 9), 0.05f, 2),
                             b1 = Floats(static_cast<std::size_t>(k.out), 1.f, 3),
                             gamma = Floats(static_cast<std::size_t>(k.out), 1.f, 4),
                             beta = Floats(static_cast<std::size_t>(k.out), 1.f, 5),
                             mean = Floats(static_cast<std::size_t>(k.out), 1.f, 6);
    std::vector<float> var = Floats(static_cast<std::size_t>(k.out), 1.f, 7);
    for (float& v : var) v = std::abs(v) + 0.5f;
    const std::string tail = k.residual ? "t = Add (n, a)\n        y = Relu (t)" : "y = Clip (n, lo, hi)";
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)" + DimsText({1, 16, k.h, k.w}) + "] x, float[" + DimsText({k.c, 16, 1, 1}) + "] w0 = " + test::FloatList(w0) +
                             ", float[" + DimsText({k.out, k.c, 3, 3}) + "] w1 = " + test::FloatList(w1) + ", float[" +
                             DimsText({k.out}) + "] b1 = " + test::FloatList(b1) + ", float[" + DimsText({k.out}) +
                             "] gamma = " + test::FloatList(gamma) + ", float[" + DimsText({k.out}) +
                             "] beta = " + test::FloatList(beta) + ", float[" + DimsText({k.out}) +
                             "] mean = " + test::FloatList(mean) + ", float[" + DimsText({k.out}) +
                             "] var = " + test::FloatList(var) + R"(, float lo = {0.0}, float hi = {6.0}) => (float[)" +
                             DimsText({1, k.out, oh, ow}) + R"(] y) {
        a = Conv (x, w0)
        b = Conv <pads = [1, 1, 1, 1], strides = )" + (k.stride == 2 ? "[2, 2]" : "[1, 1]") + R"(> (a, w1, b1)
        n = BatchNormalization (b, gamma, beta, mean, var)
        )" + tail + R"(
      })";
    // a = w0 x and the 3x3 convolution of a, in double.
    const std::vector<double> a = test::NaivePointwise(x, w0, k.c);
    const std::vector<double> b =
        test::NaiveConv2d(test::TensorOf("a", {1, k.c, k.h, k.w}, {a.begin(), a.end()}), w1, k.out, 3, k.stride, 1);
    std::vector<double> y;
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto o = i / static_cast<std::size_t>(oh * ow);
      double n = (b[i] + b1[o] - mean[o]) / std::sqrt(static_cast<double>(var[o]) + 1e-5) * gamma[o] + beta[o];
      y.push_back(k.residual ? std::max(0.0, n + a[i]) : std::clamp(n, 0.0, 6.0));
    }
    PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
    INFO(test::StepList(fused));
    const bool blocked = test::StepsContaining(fused, "conv Conv_0 jit_1x1:avx2 aBcd8b") == 1;
    const bool winograd = HaveGemmKernel() && blocked && k.winograd;
    CHECK(test::StepsContaining(fused, "onnxfuse:winograd aBcd8b") == (winograd ? 1 : 0));
    // Its transformed tiles live in the plan's scratchpad, counted there: at
    // least one block of 16 x tiles x (C + K) floats (all the tiles when they
    // are one block, else blocks of 64 here; backend/kernels/winograd.h).
    const std::int64_t tiles = (k.h + 1) / 2 * ((k.w + 1) / 2);
    if (winograd) CHECK(fused.stats.scratchpad_bytes >= 16 * std::min<std::int64_t>(tiles, 64) * (k.c + k.out) * 4);
  }
}
