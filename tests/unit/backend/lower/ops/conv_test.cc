// The layouts and algorithms convolutions choose (src/backend/lower/ops/conv.cc):
// a planar three-channel image reaching the first convolution through our
// own reorder to channels-last (backend/kernels/layout.h, emitted by
// backend/lower/core/builder.cc), or read planar by a convolution to 16 channels;
// oneDNN's Winograd algorithm for a 3x3 convolution between wide layers
// unless a Concat reads it. Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("a planar three-channel image reaches a channels-last first Conv through our own reorder",
          "[backend_ops][activation]") {
  // Two images of 70x70 pixels: 4900 per plane, more than one block of 4096
  // for the threads and not a multiple of 16 (the scalar tail). On AVX-512
  // the first Conv reads channels-last and the reorder to it is
  // backend/kernels/layout.h's; on AVX2 the Conv reads the planes itself. 32 output
  // channels: with 16 the Conv would read the planes on AVX-512 too (the
  // next test).
  std::vector<float> w = Floats(32 * 3 * 9, 0.3f, 1), bias = Floats(32, 0.2f, 2);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,70,70] x, float[32,3,3,3] w = )" + test::FloatList(w) + R"(, float[32] b = )" + test::FloatList(bias) +
                           R"() => (float[2,32,35,35] y) {
      c = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w, b)
      y = Relu (c)
    })";
  Graph graph = test::GraphFromText(text);
  Tensor x = TensorFrom({2, 3, 70, 70}, Wave);
  PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
  INFO(test::StepList(fused));
  const bool avx512 = test::StepsContaining(fused, "avx512") > 0;
  CHECK(test::StepsStartingWith(fused, "reorder Conv_0 onnxfuse:custom acdb") == (avx512 ? 1 : 0));
}

TEST_CASE("a first Conv to 16 channels reads the planar image, its nChw16c result is channels-last for its readers",
          "[backend_ops]") {
  // 3 -> 16 channels at 20x20 (MobileNetV3's stem), then a depthwise 3x3 and
  // a 1x1 to 24. On AVX-512 the first conv reads
  // NCHW and writes nChw16c, the same bytes as NHWC for 16 channels: the
  // depthwise conv (channels-last) reads them with no reorder between.
  std::vector<float> w0 = Floats(16 * 3 * 9, 0.3f, 1), w1 = Floats(16 * 9, 0.4f, 2), w2 = Floats(24 * 16, 0.3f, 3);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,20,20] x, float[16,3,3,3] w0 = )" + test::FloatList(w0) + R"(, float[16,1,3,3] w1 = )" + test::FloatList(w1) +
                           R"(, float[24,16,1,1] w2 = )" + test::FloatList(w2) + R"() => (float[1,24,20,20] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w0)
      r = Relu (a)
      d = Conv <pads = [1, 1, 1, 1], group = 16> (r, w1)
      y = Conv (d, w2)
    })";
  Graph graph = test::GraphFromText(text);
  PlanRun fused = test::CheckFusedAgainstUnfused(graph, {TensorFrom({1, 3, 20, 20}, Wave)}, 1e-5);
  INFO(test::StepList(fused));
  if (test::StepsContaining(fused, "avx512") > 0) {
    CHECK(test::StepsStartingWith(fused, "conv Conv_0+Relu jit:avx512_core aBcd16b") == 1);
    CHECK(test::StepsStartingWith(fused, "reorder Conv_") == 0);  // only the output's, to plain
  }
}

TEST_CASE("a 3x3 convolution between wide layers runs as Winograd F(2x2, 3x3) unless a Concat reads it",
          "[backend_ops]") {
  // Read by a Conv, the 64 -> 64 3x3 conv takes oneDNN's Winograd kernel (on
  // AVX-512, where it exists); read by a Concat with a channels-last branch,
  // it stays direct (its blocked layout would make the concat plain).
  std::vector<float> w1 = Floats(64 * 64 * 9, 0.05f, 1), w2 = Floats(16 * 64, 0.2f, 2), b1 = Floats(64, 0.3f, 3);
  auto model = [&](bool concat) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,64,12,12] x, float[64,64,3,3] w1 = )" + test::FloatList(w1) + R"(, float[64] b1 = )" + test::FloatList(b1) +
           R"(, float[16,64,1,1] w2 = )" + test::FloatList(w2) + R"() => (float[1,)" + (concat ? "80" : "16") + R"(,12,12] y) {
        c = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
        r = Relu (c)
        )" + (concat ? "side = Conv (x, w2)\n        y = Concat <axis = 1> (r, side)" : "y = Conv (r, w2)") + R"(
      })";
  };
  Tensor x = TensorFrom({1, 64, 12, 12}, Wave);
  for (bool concat : {false, true}) {
    INFO((concat ? "read by a Concat" : "read by a Conv"));
    Graph graph = test::GraphFromText(model(concat));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-4);
    INFO(test::StepList(fused));
    const bool avx512 = test::StepsContaining(fused, "avx512") > 0;
    CHECK(test::StepsContaining(fused, "wino") == (!concat && avx512 ? 1 : 0));
  }
}

TEST_CASE("a grouped Conv whose weights and bias are graph inputs reorders them at run time and a BatchNormalization "
          "after it is not folded",
          "[backend_ops]") {
  // X [1,4,5,5], W [6,2,3,3] (group 2: 2 input channels per group, 3 outputs per group), pads 1, stride 2 -> 3x3.
  const std::int64_t cin = 4, cout = 6, group = 2, k = 3, in = 5, stride = 2, pad = 1, out = 3;
  const std::int64_t cin_g = cin / group, cout_g = cout / group;
  const Tensor x = TensorFrom({1, cin, in, in}, Wave, "x");
  const Tensor w = TensorFrom({cout, cin_g, k, k}, [](std::int64_t i) { return 0.5f * Wave(3 * i + 1); }, "w");
  const Tensor bias = TensorFrom({cout}, [](std::int64_t i) { return 0.1f * static_cast<float>(i) - 0.2f; }, "b");
  const std::vector<float> gamma = {1.5f, 0.5f, -1.0f, 2.0f, 1.0f, 0.25f}, beta = {0.1f, 0.0f, -0.3f, 0.2f, 0.0f, 0.5f};
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,5,5] x, float[6,2,3,3] w, float[6] b, float[6] s = )" + test::FloatList(gamma) +
                           R"(, float[6] t = )" + test::FloatList(beta) + R"(, float[6] m = {0, 0, 0, 0, 0, 0},
       float[6] v = {1, 1, 1, 1, 1, 1}) => (float[1,6,3,3] y) {
      c = Conv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
      n = BatchNormalization <epsilon = 0.0> (c, s, t, m, v)
      y = Relu (n)
    })";
  std::vector<double> y(static_cast<std::size_t>(cout * out * out));
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t oh = 0; oh < out; ++oh)
      for (std::int64_t ow = 0; ow < out; ++ow) {
        double sum = bias.data[static_cast<std::size_t>(o)];
        for (std::int64_t ci = 0; ci < cin_g; ++ci)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t ih = oh * stride - pad + kh, iw = ow * stride - pad + kw, c = o / cout_g * cin_g + ci;
              if (ih < 0 || iw < 0 || ih >= in || iw >= in) continue;
              sum += static_cast<double>(x.data[static_cast<std::size_t>((c * in + ih) * in + iw)]) *
                     w.data[static_cast<std::size_t>(((o * cin_g + ci) * k + kh) * k + kw)];
            }
        const auto c = static_cast<std::size_t>(o);
        y[static_cast<std::size_t>((o * out + oh) * out + ow)] = std::max(0.0, sum * gamma[c] + beta[c]);
      }
  const PlanRun fused = test::CheckBoth(text, {x, w, bias}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "conv ") == 1);
  CHECK(test::StepsStartingWith(fused, "batch_norm BatchNormalization_1 ") == 1);
  CHECK(test::StepsStartingWith(fused, "eltwise Relu_2 ") == 1);
  // A second run with other weights gives other results: nothing was baked in at build time.
  Tensor w2 = w;
  for (float& v : w2.data) v = -v;
  const Graph graph = test::GraphFromText(text);
  const PlanRun again = test::RunPlan(graph, true, {x, w2, bias});
  const PlanRun first = test::RunPlan(graph, true, {x, w, bias});
  CHECK(again.outputs.at(0).data != first.outputs.at(0).data);
}

TEST_CASE("a Conv with constant weights and a bias computed at run time reads the bias as it is", "[backend_ops]") {
  const Tensor x = TensorFrom({1, 2, 4, 4}, Wave, "x");
  const Tensor c = TensorFrom({3}, [](std::int64_t i) { return 0.25f * static_cast<float>(i + 1); }, "c");
  const std::vector<float> w = Floats(3 * 2, 0.5f, 2);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x, float[3] c, float[3,2,1,1] w = )" + test::FloatList(w) + R"() => (float[1,3,4,4] y) {
      b = Neg (c)
      y = Conv (x, w, b)
    })";
  std::vector<double> y = test::NaivePointwise(x, w, 3);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] -= c.data[i / 16];
  test::CheckBoth(text, {x, c}, y, 1e-5);
}
