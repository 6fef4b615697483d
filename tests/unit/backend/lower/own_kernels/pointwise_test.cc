// 1x1 convolutions on small channels-last maps run as our own GEMM
// (src/backend/kernels/pointwise.h): BatchNormalization folded into the
// weights, the residual Add, Clip, Relu, HardSwish and swish in its epilogue, rows
// not a multiple of its 6-row blocks, output channels not a multiple of its
// 64-wide panels, and two such steps in a row, the first prefetching the
// second's weights. Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "backend/plan/plan_file.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::StepsContaining;
using test::StepsStartingWith;

namespace {

using Dims = std::vector<std::int64_t>;

// The GEMM is written for AVX-512 (backend/kernels/pointwise.h); elsewhere these
// convolutions stay on oneDNN.
bool HavePointwiseKernel() { return CpuIsaName().rfind("avx512", 0) == 0; }

float Wave(std::int64_t i, int salt) {
  return static_cast<float>(((i * 7 + salt * 3) % 13) - 6) * 0.0625f + 0.01f * static_cast<float>(salt);
}

Tensor Input(const std::string& name, const Dims& dims, int salt) {
  return test::TensorFrom(dims, [salt](std::int64_t i) { return Wave(i, salt); }, name);
}

std::vector<float> Values(std::int64_t n, int salt) { return Input("", {n}, salt).data; }

}  // namespace

TEST_CASE("a 1x1 Conv on a 7x7 map with BatchNormalization, a residual Add and Clip is one pointwise step",
          "[pointwise]") {
  // Batch 2: 98 rows (16 blocks of 6 and 2 left); 80 output channels: a
  // 64-wide panel and a 16-wide one.
  const std::int64_t in = 40, out = 80, pixels = 49;
  const std::vector<float> w = Values(out * in, 1), gamma = Values(out, 2), beta = Values(out, 3),
                           mean = Values(out, 4);
  std::vector<float> var(static_cast<std::size_t>(out));
  for (std::int64_t c = 0; c < out; ++c) var[static_cast<std::size_t>(c)] = 0.5f + 0.01f * static_cast<float>(c);
  const Tensor x = Input("x", {2, in, 7, 7}, 5), r = Input("r", {2, out, 7, 7}, 6);
  std::vector<double> y = test::NaivePointwise(x, w, out);
  for (std::size_t k = 0; k < y.size(); ++k) {
    const auto c = static_cast<std::size_t>(static_cast<std::int64_t>(k) / pixels % out);
    const double scale = gamma[c] / std::sqrt(static_cast<double>(var[c]) + 1e-5);
    y[k] = std::clamp((y[k] - mean[c]) * scale + beta[c] + r.data[k], 0.0, 6.0);
  }
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,7,7,40] xt, float[2,80,7,7] r, float[80,40,1,1] w = )" + test::FloatList(w) + R"(, float[80] s = )" + test::FloatList(gamma) +
                              R"(, float[80] b = )" + test::FloatList(beta) + R"(, float[80] m = )" + test::FloatList(mean) +
                              R"(, float[80] v = )" + test::FloatList(var) + R"() => (float[2,80,7,7] y) {
      x = Transpose <perm = [0, 3, 1, 2]> (xt)
      c = Conv (x, w)
      n = BatchNormalization (c, s, b, m, v)
      a = Add (n, r)
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {6.0}> ()
      y = Clip (a, lo, hi)
    })",
                          {test::ChannelsLast(x, "xt"), r}, y, 1e-4);
  INFO(test::StepList(run));
  // One step for the whole chain: our GEMM on AVX-512, else oneDNN's 1x1 kernel with post-ops.
  CHECK(StepsStartingWith(run, "conv ") == 1);
  CHECK(StepsContaining(run, "onnxfuse:pointwise") == (HavePointwiseKernel() ? 1 : 0));
}

TEST_CASE("pointwise steps in a row: HardSwish, a depthwise Conv between, Relu, the first prefetches the second",
          "[pointwise]") {
  // x [1,24,5,5] -> 1x1 to 48 channels, HardSigmoid * x -> depthwise 3x3 ->
  // 1x1 to 16 channels, Relu. 25 rows: 4 blocks of 6 and 1 left.
  const std::int64_t in = 24, mid = 48, out = 16, side = 5, pixels = side * side;
  const std::vector<float> w1 = Values(mid * in, 7), dw = Values(mid * 9, 8), w2 = Values(out * mid, 9);
  const Tensor x = Input("x", {1, in, side, side}, 10);
  std::vector<double> h = test::NaivePointwise(x, w1, mid);
  for (double& v : h) v *= std::clamp(v / 6 + 0.5, 0.0, 1.0);
  Tensor d;
  d.name = "d", d.dims = {1, mid, side, side};
  for (std::int64_t c = 0; c < mid; ++c)
    for (std::int64_t i = 0; i < side; ++i)
      for (std::int64_t j = 0; j < side; ++j) {
        double s = 0;
        for (std::int64_t a = -1; a <= 1; ++a)
          for (std::int64_t e = -1; e <= 1; ++e)
            if (i + a >= 0 && i + a < side && j + e >= 0 && j + e < side)
              s += dw[static_cast<std::size_t>(c * 9 + (a + 1) * 3 + e + 1)] *
                   h[static_cast<std::size_t>(c * pixels + (i + a) * side + j + e)];
        d.data.push_back(static_cast<float>(s));
      }
  std::vector<double> y = test::NaivePointwise(d, w2, out);
  for (double& v : y) v = std::max(v, 0.0);
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,5,5,24] xt, float[48,24,1,1] w1 = )" + test::FloatList(w1) + R"(, float[48,1,3,3] dw = )" + test::FloatList(dw) +
                              R"(, float[16,48,1,1] w2 = )" + test::FloatList(w2) + R"() => (float[1,16,5,5] y) {
      x = Transpose <perm = [0, 3, 1, 2]> (xt)
      c1 = Conv (x, w1)
      g1 = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c1)
      h1 = Mul (c1, g1)
      c2 = Conv <group = 48, pads = [1, 1, 1, 1]> (h1, dw)
      c3 = Conv (c2, w2)
      y = Relu (c3)
    })",
                          {test::ChannelsLast(x, "xt")}, y, 1e-4);
  INFO(test::StepList(run));
  CHECK(StepsStartingWith(run, "conv ") == 3);
  CHECK(StepsContaining(run, "onnxfuse:pointwise") == (HavePointwiseKernel() ? 2 : 0));
}

TEST_CASE("a 1x1 Conv with swish (x * Sigmoid(x)) on a 14x14 map is one pointwise step: swish in its epilogue",
          "[pointwise]") {
  // EfficientNet's expand convolutions at 14x14: 196 rows, 40 -> 240 channels.
  const std::int64_t in = 40, out = 240;
  const Tensor x = Input("x", {1, in, 14, 14}, 13);
  const std::vector<float> w = Values(out * in, 14), bias = Values(out, 15);
  std::vector<double> y = test::NaivePointwise(x, w, out);
  for (std::size_t k = 0; k < y.size(); ++k) {
    const double v = y[k] + bias[k / 196];
    y[k] = v / (1 + std::exp(-v));
  }
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,14,14,40] xt, float[240,40,1,1] w = )" + test::FloatList(w) + R"(, float[240] b = )" + test::FloatList(bias) +
                              R"() => (float[1,240,14,14] y) {
      x = Transpose <perm = [0, 3, 1, 2]> (xt)
      c = Conv (x, w, b)
      s = Sigmoid (c)
      y = Mul (c, s)
    })",
                          {test::ChannelsLast(x, "xt")}, y, 1e-4);
  INFO(test::StepList(run));
  CHECK(StepsStartingWith(run, "conv ") == 1);
  if (HavePointwiseKernel()) {
    CHECK(StepsContaining(run, "onnxfuse:pointwise") == 1);
    CHECK(StepsStartingWith(run, "swish ") == 0);
  }
}

TEST_CASE("a 1x1 Conv on a map of more than 256 pixels stays on oneDNN", "[pointwise]") {
  const Tensor x = Input("x", {1, 16, 17, 17}, 11);  // 289 rows: more than the GEMM takes
  const std::vector<float> w = Values(32 * 16, 12);
  std::vector<double> y = test::NaivePointwise(x, w, 32);
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,17,17,16] xt, float[32,16,1,1] w = )" + test::FloatList(w) + R"() => (float[1,32,17,17] y) {
      x = Transpose <perm = [0, 3, 1, 2]> (xt)
      y = Conv (x, w)
    })",
                          {test::ChannelsLast(x, "xt")}, y, 1e-4);
  CHECK(StepsContaining(run, "onnxfuse:pointwise") == 0);
}
