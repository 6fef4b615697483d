// Elementwise activations (src/backend/lower/ops/eltwise.cc): Relu is
// max(x, 0) with NaN to 0 on every path that runs it; PRelu (EmitPrelu) is a prelu primitive, its slope
// per channel after a Conv's layout or broadcast along the last axis. Numbers
// are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Relu as oneDNN's JIT kernels compute it, max(x, 0) with NaN to 0 (ONNX
// Runtime keeps NaN: docs/correctness.md): the same on every path, so that
// fused equals unfused; -inf is 0.
void CheckRelu(const Tensor& y, const std::vector<double>& pre) {
  REQUIRE(static_cast<std::size_t>(y.NumElements()) == pre.size());
  int nan = 0, zero = 0;
  for (std::size_t i = 0; i < pre.size(); ++i) {
    INFO("element " << i << " of " << y.name << ": Relu of " << pre[i] << " gave " << y.data[i]);
    CHECK(y.data[i] == static_cast<float>(pre[i] > 0 ? pre[i] : 0.0));
    nan += std::isnan(pre[i]);
    zero += pre[i] <= 0;
  }
  CHECK(nan > 0);  // the case tests something
  CHECK(zero > 0);
}

// A [1, 8, 6, 6] input of small integers (so that sums of them are exact),
// NaN at a few pixels of channel 0 and -inf at one of channel 1.
Tensor SpecialInput() {
  Tensor x = TensorFrom({1, 8, 6, 6}, [](std::int64_t i) { return static_cast<float>(i % 7) - 3.f; });
  x.data[7] = x.data[30] = kNaN;
  x.data[36 + 20] = -kInf;
  return x;
}

}  // namespace

TEST_CASE("Relu gives 0 for NaN and -inf alike: alone, after BatchNormalization or Concat, and fused into a Conv, a Gemm and a MatMul",
          "[backend_ops]") {
  const Tensor x = SpecialInput();
  std::vector<double> pre(x.data.begin(), x.data.end());
  SECTION("alone") {
    Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[1,8,6,6] x) => (float[1,8,6,6] y) {
        y = Relu (x)
      })");
    for (bool fuse : {false, true}) CheckRelu(test::RunPlan(graph, fuse, {x}).outputs.at(0), pre);
  }
  SECTION("after BatchNormalization (no fuse_norm_relu: its plain-layout kernel keeps NaN)") {
    Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[1,8,6,6] x, float[8] s, float[8] b, float[8] m, float[8] v) => (float[1,8,6,6] y) {
        n = BatchNormalization <epsilon = 0.0> (x, s, b, m, v)
        y = Relu (n)
      })");
    const auto all = [](float value, const char* name) { return TensorFrom({8}, [value](std::int64_t) { return value; }, name); };
    for (bool fuse : {false, true})
      CheckRelu(test::RunPlan(graph, fuse, {x, all(1, "s"), all(0, "b"), all(0, "m"), all(1, "v")}).outputs.at(0), pre);
  }
  SECTION("after Concat and BatchNormalization of two 1x1 Convs, one pass of our own") {
    Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[1,8,6,6] x) => (float[1,16,6,6] y) {
        wd = Constant <value = int64[4] {8, 8, 1, 1}> ()
        w = ConstantOfShape <value = float[1] {1}> (wd)
        one = Constant <value = float[16] {1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}> ()
        zero = Constant <value = float[16] {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}> ()
        a = Conv (x, w)
        b = Conv (x, w)
        c = Concat <axis = 1> (a, b)
        n = BatchNormalization <epsilon = 0.0> (c, one, zero, zero, one)
        y = Relu (n)
      })");
    std::vector<double> sums;  // each Conv: the sum over x's channels at each pixel, for each of 8 channels
    for (int part = 0; part < 2; ++part)
      for (int o = 0; o < 8; ++o)
        for (int p = 0; p < 36; ++p) {
          double acc = 0;
          for (int c = 0; c < 8; ++c) acc += x.data[static_cast<std::size_t>(c * 36 + p)];
          sums.push_back(acc);
        }
    for (bool fuse : {false, true}) {
      PlanRun run = test::RunPlan(graph, fuse, {x});
      INFO(test::StepList(run));
      if (fuse) CHECK(test::StepsStartingWith(run, "concat_batch_norm ") == 1);
      CheckRelu(run.outputs.at(0), sums);
    }
  }
  SECTION("as the post-op or epilogue of a 3x3 and a 1x1 Conv") {
    // Weights of ones: each output is an exact sum of the window's inputs
    // over all channels, NaN or -inf where the window holds one.
    for (int k : {1, 3}) {
      const std::string kernel = std::to_string(k), pad = std::to_string(k / 2);
      Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[1,8,6,6] x) => (float[1,16,6,6] y) {
          wd = Constant <value = int64[4] {16, 8, )" + kernel + ", " + kernel + R"(}> ()
          w = ConstantOfShape <value = float[1] {1}> (wd)
          c = Conv <pads = [)" + pad + ", " + pad + ", " + pad + ", " + pad + R"(]> (x, w)
          y = Relu (c)
        })");
      std::vector<double> conv;
      for (int o = 0; o < 16; ++o)
        for (int h = 0; h < 6; ++h)
          for (int w = 0; w < 6; ++w) {
            double acc = 0;
            for (int c = 0; c < 8; ++c)
              for (int dh = -k / 2; dh <= k / 2; ++dh)
                for (int dw = -k / 2; dw <= k / 2; ++dw)
                  if (h + dh >= 0 && h + dh < 6 && w + dw >= 0 && w + dw < 6) acc += x.data[static_cast<std::size_t>((c * 6 + h + dh) * 6 + w + dw)];
            conv.push_back(acc);
          }
      INFO("kernel " << k);
      for (bool fuse : {false, true}) {
        PlanRun run = test::RunPlan(graph, fuse, {x});
        INFO((fuse ? "fused:\n" : "unfused:\n") << test::StepList(run));
        CheckRelu(run.outputs.at(0), conv);
      }
    }
  }
  SECTION("as the post-op or epilogue of a MatMul and a Gemm") {
    // [36, 8] rows of x's channels 0 and 1 laid out by pixel, times ones [8, 16].
    Tensor a = TensorFrom({36, 8}, [&](std::int64_t i) { return x.data[static_cast<std::size_t>(i)]; }, "a");
    std::vector<double> product;
    for (int r = 0; r < 36; ++r)
      for (int c = 0; c < 16; ++c) {
        double acc = 0;
        for (int k = 0; k < 8; ++k) acc += a.data[static_cast<std::size_t>(r * 8 + k)];
        product.push_back(acc);
      }
    for (const char* op : {"MatMul", "Gemm"}) {
      Graph graph = test::GraphFromText(std::string(R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[36,8] a) => (float[36,16] y) {
          wd = Constant <value = int64[2] {8, 16}> ()
          w = ConstantOfShape <value = float[1] {1}> (wd)
          p = )") + op + R"( (a, w)
          y = Relu (p)
        })");
      INFO(op);
      for (bool fuse : {false, true}) CheckRelu(test::RunPlan(graph, fuse, {a}).outputs.at(0), product);
    }
  }
}

TEST_CASE("PRelu: a prelu primitive, per-channel after a Conv's layout, or broadcast along the last axis", "[backend_ops]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0},
       float[2,1,1] slope = {0.1, -2.0}) => (float[1,2,3,3] y) {
      c = Conv (x, w)
      y = PRelu (c, slope)
    })";
  Tensor x = TensorFrom({1, 1, 4, 4}, Wave);
  const float w[2][4] = {{0.5f, -0.25f, 0.75f, 1.0f}, {-0.5f, 0.25f, 0.125f, -1.0f}}, slope[2] = {0.1f, -2.0f};
  std::vector<double> y;
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 3; ++h)
      for (int v = 0; v < 3; ++v) {
        double acc = 0;
        for (int kh = 0; kh < 2; ++kh)
          for (int kw = 0; kw < 2; ++kw) acc += static_cast<double>(w[o][kh * 2 + kw]) * x.data[static_cast<std::size_t>((h + kh) * 4 + v + kw)];
        y.push_back(acc < 0 ? slope[o] * acc : acc);
      }
  // Not a post-op: oneDNN 2.6 runs convolutions with a prelu post-op on its reference kernel only.
  PlanRun fused = CheckBoth(text, {x}, y);
  CHECK(fused.stats.kernels - fused.stats.reorders == 2);

  // Broadcast along the last axis, slope a run-time input.
  Tensor a = TensorFrom({2, 3}, [](std::int64_t i) { return static_cast<float>(i) - 2.5f; }, "a");
  Tensor s = TensorFrom({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i + 1); }, "s");
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[3] s) => (float[2,3] y) {
      y = PRelu (a, s)
    })",
            {a, s}, {-2.5 * 0.5, -1.5 * 1.0, -0.5 * 1.5, 0.5, 1.5, 2.5});
}

TEST_CASE("an activation over a blocked layout with padded channels runs on a jit kernel in the plain layout",
          "[backend_ops]") {
  // A squeeze-and-excitation vector of 4 channels from a convolution whose
  // layout blocks channels by 8, quantized and dequantized (a QDQ model)
  // before its Sigmoid, which therefore is no post-op of the convolution:
  // oneDNN 2.6 has only its reference eltwise for the padded blocked layout.
  std::string w;
  for (int i = 0; i < 4 * 32; ++i) w += (i ? "," : "") + std::to_string(((i * 7) % 11 - 5) / 16.0);
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,32,1,1] x) => (float[1,4,1,1] y) {
      w = Constant <value = float[4,32,1,1] {)" + w + R"(}> ()
      s = Constant <value = float {0.01}> ()
      z = Constant <value = uint8 {128}> ()
      c = Conv (x, w)
      q = QuantizeLinear (c, s, z)
      d = DequantizeLinear (q, s, z)
      y = Sigmoid (d)
    })");
  const Tensor x = TensorFrom({1, 32, 1, 1}, [](std::int64_t i) { return Wave(i); });
  const PlanRun fused = test::RunPlan(graph, true, {x});
  const PlanRun unfused = test::RunPlan(graph, false, {x});
  INFO(test::StepList(fused));
  CHECK(test::StepsContaining(fused, "eltwise") == 1);
  CHECK(test::StepsContaining(fused, "ref") == 0);
  // Sigmoid of the same quantized values: equal up to the kernels' rounding.
  std::vector<double> expected(unfused.outputs.at(0).data.begin(), unfused.outputs.at(0).data.end());
  test::CheckClose(fused.outputs.at(0), expected, 1e-5, 1e-7);
}

TEST_CASE("PRelu that oneDNN runs only on its reference kernel runs on our broadcast kernel", "[backend_ops]") {
  // oneDNN 2.6's prelu with one slope for a 4-D x is ref:any (found by the
  // differential tester): BroadcastBinary's PRelu, y = x < 0 ? slope * x : x.
  const Tensor x = TensorFrom({2, 2, 2, 5}, [](std::int64_t i) { return Wave(5 * i); });
  std::vector<double> y;
  for (float v : x.data) y.push_back(v < 0 ? 0.25 * v : v);
  const PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2,2,5] x, float[1] slope = {0.25}) => (float[2,2,2,5] y) {
      y = PRelu (x, slope)
    })",
                                  {x}, y, 0);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
  CHECK(test::StepsContaining(fused, "prelu PRelu_0 onnxfuse:broadcast_binary") == 1);
}
