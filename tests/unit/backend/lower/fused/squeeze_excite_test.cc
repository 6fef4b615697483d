// Squeeze-and-excitation (src/backend/lower/fused/squeeze_excite.cc,
// backend/lower/fused/channel_scale.cc): the excitation as one step, the gate x * s folded
// into the next convolution's weights, and x * s on a channel-blocked x on a
// jit binary. Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("squeeze-and-excitation: the excitation is one step and the gate x * s scales the next Conv's weights",
          "[backend_ops]") {
  // x (a 3x3 conv's output, in the conv's layout) -> GlobalAveragePool -> 1x1
  // conv -> Relu or swish -> 1x1 conv -> Sigmoid or HardSigmoid = s (one
  // squeeze_excite step); x * s -> 1x1 projection conv with 24 outputs (not a
  // multiple of oneDNN's 16-channel weight blocks: padding). At 10x10, x (1600
  // elements) outweighs the projection's weights (384): the product is never
  // made. At 3x3 (144 elements) it is a binary primitive as before.
  std::vector<float> wx = Floats(16 * 4 * 9, 0.2f, 1), w1 = Floats(4 * 16, 0.5f, 2), w2 = Floats(16 * 4, 0.6f, 3),
                     b2 = Floats(16, 0.4f, 4), wp = Floats(24 * 16, 0.3f, 5), bp = Floats(24, 0.5f, 6);
  auto model = [&](int side, bool mobilenet_v3) {
    const std::string s = std::to_string(side);
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4,)" + s + "," + s + R"(] x0, float[16,4,3,3] wx = )" + test::FloatList(wx) + R"(, float[4,16,1,1] w1 = )" +
           test::FloatList(w1) + R"(, float[16,4,1,1] w2 = )" + test::FloatList(w2) + R"(, float[16] b2 = )" + test::FloatList(b2) +
           R"(, float[24,16,1,1] wp = )" + test::FloatList(wp) + R"(, float[24] bp = )" + test::FloatList(bp) + R"() => (float[1,24,)" + s +
           "," + s + R"(] y) {
        x = Conv <pads = [1, 1, 1, 1]> (x0, wx)
        pooled = GlobalAveragePool (x)
        f1 = Conv (pooled, w1)
        )" + (mobilenet_v3 ? "r1 = Relu (f1)" : "g1 = Sigmoid (f1)\n        r1 = Mul (f1, g1)") + R"(
        f2 = Conv (r1, w2, b2)
        gate = )" + (mobilenet_v3 ? "HardSigmoid <alpha = 0.25, beta = 0.4> (f2)" : "Sigmoid (f2)") + R"(
        scaled = Mul (x, gate)
        y = Conv (scaled, wp, bp)
      })";
  };
  for (int side : {10, 3})
    for (bool mobilenet_v3 : {false, true}) {
      INFO("spatial " << side << "x" << side << (mobilenet_v3 ? ", Relu and HardSigmoid" : ", swish and Sigmoid"));
      Graph graph = test::GraphFromText(model(side, mobilenet_v3));
      Tensor x0 = TensorFrom({1, 4, side, side}, Wave, "x0");
      PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x0}, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsStartingWith(fused, "squeeze_excite ") == 1);
      CHECK(test::StepsStartingWith(fused, "conv ") == 2);  // the 3x3 and the projection
      CHECK(test::StepsStartingWith(fused, "channel_scale ") == (side == 10 ? 1 : 0));
      CHECK(test::StepsStartingWith(fused, "binary ") == (side == 10 ? 0 : 1));
    }
}

TEST_CASE("x * s with per-channel s on a channel-blocked x runs a jit binary, never oneDNN's reference one",
          "[backend_ops]") {
  // A 3x3 conv's output x (fused: nChw16c with AVX-512, nChw8c with AVX2)
  // times its channel means s [1, C, 1, 1] (a GlobalAveragePool, in x's
  // layout), read by no convolution: a binary step. oneDNN 2.6 on AVX2 has a
  // jit binary for an nChw8c src0 only when s is blocked the same way; with s
  // plain it fell back to ref:any (7 ms instead of 0.05 on EfficientNet-B0's
  // 1152-channel blocks). C = 20 and 32: padded to the block, and not. The
  // same with a constant s, when x is also a graph output (so the Mul is no
  // post-op of the conv): s is then blocked at build time.
  for (bool constant : {false, true})
    for (std::int64_t channels : {20, 32}) {
      INFO(channels << " channels, s " << (constant ? "constant" : "computed"));
      const std::string c = std::to_string(channels);
      std::vector<float> w = Floats(static_cast<std::size_t>(channels * 4 * 9), 0.2f, 7),
                         scale = Floats(static_cast<std::size_t>(channels), 0.5f, 8);
      Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[1,4,6,6] x0, float[)" + c + R"(,4,3,3] w = )" + test::FloatList(w) + R"(, float[1,)" + c + R"(,1,1] s = )" +
                                        test::FloatList(scale) + R"() => (float[1,)" + c + R"(,6,6] y, float[1,)" + c +
                                        R"(,6,6] x) {
          x = Conv <pads = [1, 1, 1, 1]> (x0, w)
          )" + (constant ? "y = Mul (x, s)" : "means = GlobalAveragePool (x)\n          y = Mul (x, means)") + R"(
        })");
      PlanRun fused = test::CheckFusedAgainstUnfused(graph, {TensorFrom({1, 4, 6, 6}, Wave, "x0")}, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsStartingWith(fused, "binary ") == 1);
      CHECK(test::StepsContaining(fused, "ref:") == 0);
    }
}
