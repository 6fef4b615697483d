// An inverted residual block (src/backend/lower/fused/inverted_residual.cc):
// one step of our depth-first kernel where the expanded tensor outgrows the
// L2 cache (UseInvertedResidual), the three convolutions otherwise; outputs
// equal to the unfused plan's (one primitive per node, plain layouts) at 1 and
// 2 threads, for each activation, kernel size, stride, with and without the
// residual. A block with squeeze-and-excitation (EfficientNet's) runs its
// expand and depthwise convolutions as one such step that also takes the
// GlobalAveragePool of their result. The [lower_ops] tag runs this file again under the AVX2 cap
// (tests/CMakeLists.txt): the kernel's AVX2 build inside a plan.
#include <catch2/catch.hpp>

#include <omp.h>

#include <string>

#include "backend/kernels/inverted_residual.h"
#include "backend/lower/fused/inverted_residual.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

struct Block {
  int side = 64, in = 16, expanded = 192, out = 16, kernel = 3, stride = 1;
  std::string act = "Clip";
  bool residual = true;
  int squeeze = 0;  ///< > 0: squeeze-and-excitation to this many channels before the projection
};

std::string Activation(const std::string& act, const std::string& in, const std::string& out) {
  if (act == "Clip") return out + " = Clip (" + in + ", lo, hi)\n";
  if (act == "SiLU") return out + "_h = Sigmoid (" + in + ")\n" + out + " = Mul (" + in + ", " + out + "_h)\n";
  if (act == "HardSigmoidMul") return out + "_h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (" + in + ")\n" + out +
                                      " = Mul (" + in + ", " + out + "_h)\n";
  return out + " = " + act + " (" + in + ")\n";
}

// BatchNormalization's four [n] parameters named prefix_{s,t,m,v}, far from identity.
std::string BnParams(const std::string& prefix, int n, int seed) {
  const auto count = static_cast<std::size_t>(n);
  return ", float[" + std::to_string(n) + "] " + prefix + "_s = " + test::FloatList(Floats(count, 0.5f, seed)) +
         ", float[" + std::to_string(n) + "] " + prefix + "_t = " + test::FloatList(Floats(count, 0.3f, seed + 1)) +
         ", float[" + std::to_string(n) + "] " + prefix + "_m = " + test::FloatList(Floats(count, 0.2f, seed + 2)) +
         ", float[" + std::to_string(n) + "] " + prefix + "_v = " +
         test::FloatList(std::vector<float>(count, 1.5f));
}

std::string Model(const Block& b) {
  const int out_side = (b.side + 2 * (b.kernel / 2) - b.kernel) / b.stride + 1;
  const std::string e = std::to_string(b.expanded), k = std::to_string(b.kernel), p = std::to_string(b.kernel / 2),
                    s = std::to_string(b.stride);
  const auto n = [](int v) { return static_cast<std::size_t>(v); };
  const std::string r = std::to_string(b.squeeze);
  // EfficientNet's squeeze-and-excitation: the mean of each channel, 1x1 to r
  // channels, swish, 1x1 back, Sigmoid, the channels scaled by it.
  const std::string se_params =
      b.squeeze == 0 ? ""
                     : ", float[" + r + "," + e + ",1,1] s1 = " + test::FloatList(Floats(n(b.squeeze * b.expanded), 0.3f, 14)) +
                           ", float[" + r + "] t1 = " + test::FloatList(Floats(n(b.squeeze), 0.2f, 15)) + ", float[" + e +
                           "," + r + ",1,1] s2 = " + test::FloatList(Floats(n(b.expanded * b.squeeze), 0.3f, 16)) +
                           ", float[" + e + "] t2 = " + test::FloatList(Floats(n(b.expanded), 0.2f, 17));
  const std::string se = b.squeeze == 0 ? ""
                                        : "p = GlobalAveragePool (a2)\n      f1 = Conv (p, s1, t1)\n      " +
                                              Activation("SiLU", "f1", "g1") +
                                              "      f2 = Conv (g1, s2, t2)\n      g2 = Sigmoid (f2)\n      a3 = Mul (a2, g2)\n";
  return R"(<ir_version: 8, opset_import: ["" : )" + std::string(b.act == "HardSwish" ? "14" : "13") + R"(]>
    g (float[1,)" + std::to_string(b.in) + "," + std::to_string(b.side) + "," + std::to_string(b.side) +
         R"(] x, float[)" + e + "," + std::to_string(b.in) + ",1,1] w1 = " +
         test::FloatList(Floats(n(b.expanded * b.in), 0.3f, 11)) + ", float[" + e + ",1," + k + "," + k + "] w2 = " +
         test::FloatList(Floats(n(b.expanded * b.kernel * b.kernel), 0.4f, 12)) + ", float[" + std::to_string(b.out) +
         "," + e + ",1,1] w3 = " + test::FloatList(Floats(n(b.out * b.expanded), 0.2f, 13)) +
         ", float lo = {0.0}, float hi = {6.0}" + BnParams("p", b.expanded, 20) + BnParams("d", b.expanded, 30) +
         BnParams("q", b.out, 40) + se_params + R"() => (float[1,)" + std::to_string(b.out) + "," + std::to_string(out_side) + "," +
         std::to_string(out_side) + R"(] y) {
      c1 = Conv (x, w1)
      b1 = BatchNormalization (c1, p_s, p_t, p_m, p_v)
      )" + Activation(b.act, "b1", "a1") + R"(
      c2 = Conv <group = )" + e + ", kernel_shape = [" + k + ", " + k + "], pads = [" + p + ", " + p + ", " + p + ", " +
         p + "], strides = [" + s + ", " + s + R"(]> (a1, w2)
      b2 = BatchNormalization (c2, d_s, d_t, d_m, d_v)
      )" + Activation(b.act, "b2", "a2") + se + R"(
      c3 = Conv ()" + std::string(b.squeeze == 0 ? "a2" : "a3") + R"(, w3)
      )" + (b.residual ? "b3 = BatchNormalization (c3, q_s, q_t, q_m, q_v)\n      y = Add (b3, x)"
                       : "y = BatchNormalization (c3, q_s, q_t, q_m, q_v)") + R"(
    })";
}

// The block fused by the pattern library (the strategy that groups whole
// blocks), at `threads` OpenMP threads, against the unfused plan; the number
// of inverted_residual steps.
int Check(const Block& b, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  Graph graph = test::GraphFromText(Model(b));
  Tensor x = TensorFrom({1, b.in, b.side, b.side}, Wave, "x");
  PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5, Strategy::kPattern);
  omp_set_num_threads(before);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
  // The work of the three convolutions, whether one step or three (ScheduleStep::flops).
  const double out_side = (b.side + 2 * (b.kernel / 2) - b.kernel) / b.stride + 1;
  const double conv_flops = 2.0 * (b.side * b.side * b.in * b.expanded + out_side * out_side * b.expanded *
                                   b.kernel * b.kernel + out_side * out_side * b.expanded * b.out);
  double flops = 0;
  for (const ScheduleStep& step : fused.schedule)
    if (step.kind == "conv") flops += step.flops;
  CHECK(flops == Approx(conv_flops));
  if (b.squeeze > 0) {  // the pool and the swish passes are the step's
    CHECK(test::StepsStartingWith(fused, "pooling ") == 0);
    CHECK(test::StepsStartingWith(fused, "swish ") == 0);
  }
  return test::StepsContaining(fused, "onnxfuse:inverted_residual");
}

}  // namespace

TEST_CASE("an inverted residual block whose expanded tensor outgrows L2 is one step of the depth-first kernel",
          "[lower_ops][inverted_residual]") {
  // 64 x 64 x 192 floats expanded: 3 MB, more than the L2 of any core we run on.
  std::vector<Block> blocks;
  for (const char* act : {"Clip", "Relu", "HardSwish", "HardSigmoidMul"}) {
    Block b;
    b.act = act;
    blocks.push_back(b);
  }
  Block stride2;  // MobileNetV2's features.2: 16 -> 96 -> 24 at stride 2, no residual
  stride2.side = 112, stride2.expanded = 96, stride2.out = 24, stride2.stride = 2, stride2.residual = false;
  blocks.push_back(stride2);
  Block five;  // a 5x5 depthwise kernel, odd channel counts
  five.side = 60, five.in = 20, five.expanded = 200, five.out = 20, five.kernel = 5, five.act = "Relu";
  blocks.push_back(five);
  for (const Block& b : blocks)
    for (int threads : {1, 2}) {
      INFO(b.act << " " << b.side << "x" << b.side << " " << b.in << " -> " << b.expanded << " -> " << b.out
                 << " kernel " << b.kernel << " stride " << b.stride << " residual " << b.residual << ", " << threads
                 << " threads");
      const bool chosen =
          backend::UseInvertedResidual(b.side, b.side, b.expanded, backend::L2CacheBytes());
      CHECK(chosen);
      CHECK(Check(b, threads) == (chosen ? 1 : 0));
    }
}

TEST_CASE("a block with squeeze-and-excitation whose expanded tensor outgrows L2: expand, depthwise and the pool as one step",
          "[lower_ops][inverted_residual]") {
  // EfficientNet-B0's features.2.0 (16 -> 96 -> 24 at stride 2, swish, SE to
  // 4 channels) and features.2.1 (24 -> 144 -> 24, the residual), smaller maps.
  Block first;
  first.side = 80, first.expanded = 96, first.out = 24, first.stride = 2, first.residual = false, first.squeeze = 4;
  first.act = "SiLU";
  Block second;
  second.side = 56, second.in = 24, second.expanded = 144, second.out = 24, second.squeeze = 6, second.act = "SiLU";
  Block relu;  // another activation, not a multiple of 16 expanded channels (d through the tile)
  relu.side = 64, relu.expanded = 72, relu.squeeze = 8, relu.act = "Relu";
  for (const Block& b : {first, second, relu})
    for (int threads : {1, 2}) {
      INFO(b.act << " " << b.side << " expanded " << b.expanded << " squeeze " << b.squeeze << ", " << threads
                 << " threads");
      REQUIRE(backend::UseInvertedResidual(b.side, b.side, b.expanded, backend::L2CacheBytes()));
      CHECK(Check(b, threads) == 1);
    }
}

TEST_CASE("an inverted residual block whose expanded tensor fits in L2 stays three convolutions",
          "[lower_ops][inverted_residual]") {
  Block small;  // 14 x 14 x 96 floats: 75 KB
  small.side = 14, small.expanded = 96;
  REQUIRE_FALSE(backend::UseInvertedResidual(14, 14, 96, backend::L2CacheBytes()));
  CHECK(Check(small, 1) == 0);
}

TEST_CASE("the cost model: the depth-first kernel where the expanded tensor outgrows L2", "[inverted_residual]") {
  // MobileNetV2 at 224 x 224 on a core with 1 MB of L2: features.2 to 4
  // (112 x 112 x 96, 56 x 56 x 144) are depth-first, features.5 on (28 x 28 x 192: 588 KB) not.
  CHECK(backend::UseInvertedResidual(112, 112, 96, 1 << 20));
  CHECK(backend::UseInvertedResidual(56, 56, 144, 1 << 20));
  CHECK_FALSE(backend::UseInvertedResidual(28, 28, 192, 1 << 20));
  CHECK_FALSE(backend::UseInvertedResidual(56, 56, 144, 2 << 20));  // a core with 2 MB of L2
}
