// Concat (src/backend/lower/ops/concat.cc): whole runs copied run by run, and
// Concats never materialized when convolutions or a MaxPool read them part by
// part (Concat -> BatchNormalization in one pass: concat_norm_test.cc).
// Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::ConcatenatedPointwise;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

// SqueezeNet's fire module on x [1,4,9,9]: a 1x1 squeeze conv to 8 channels
// and Relu, 1x1 and 3x3 expand convs to 16 and 24 channels each with Relu,
// concatenated as `cat` [1,40,9,9] (nodes Conv_0 to Concat_6). FireInputs()
// declares x and the convs' weights (ws, we1, we3), then wn [12,40,1,1] for
// the 1x1 conv that reads `cat`: a graph's first inputs.
const char* const kFireModule = R"(
        sq = Conv (x, ws)
        s = Relu (sq)
        e1 = Conv (s, we1)
        r1 = Relu (e1)
        e3 = Conv <pads = [1, 1, 1, 1]> (s, we3)
        r3 = Relu (e3)
        cat = Concat <axis = 1> (r1, r3)
)";

std::string FireInputs() {
  return "float[1,4,9,9] x, float[8,4,1,1] ws = " + test::FloatList(Floats(8 * 4, 0.4f, 1)) +
         ", float[16,8,1,1] we1 = " + test::FloatList(Floats(16 * 8, 0.3f, 2)) +
         ", float[24,8,3,3] we3 = " + test::FloatList(Floats(24 * 8 * 9, 0.2f, 3)) +
         ", float[12,40,1,1] wn = " + test::FloatList(Floats(12 * 40, 0.25f, 4));
}

}  // namespace

TEST_CASE("a Concat whose parts are whole runs of its result is copied run by run", "[backend_ops]") {
  // Plain parts along axis 1 of [2, C, 4]: per image, runs of 12, 20 and 4
  // floats. Then three 1x1 convolutions of x [2,4,3,3] with 16, 8 and 24
  // output channels: nChw8c on AVX2, where each part is a whole number of
  // 8-channel blocks and each image of the result is the three parts one
  // after another.
  {
    Tensor p = TensorFrom({2, 3, 4}, Wave, "p"), q = TensorFrom({2, 5, 4}, [](std::int64_t i) { return Wave(i + 5); }, "q"),
           r = TensorFrom({2, 1, 4}, [](std::int64_t i) { return Wave(i + 9); }, "r");
    const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] p, float[2,5,4] q, float[2,1,4] r) => (float[2,9,4] y) {
        y = Concat <axis = 1> (p, q, r)
      })";
    std::vector<double> y;
    for (std::int64_t n = 0; n < 2; ++n)
      for (const Tensor* t : {&p, &q, &r})
        for (std::int64_t i = 0; i < t->dims[1] * 4; ++i) y.push_back(t->data[static_cast<std::size_t>(n * t->dims[1] * 4 + i)]);
    PlanRun fused = CheckBoth(text, {p, q, r}, y, 0);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "concat Concat_0 onnxfuse:concat_copy ") == 1);
  }
  const std::int64_t n = 2, cin = 4;
  const std::vector<std::int64_t> couts = {16, 8, 24};
  Tensor x = TensorFrom({n, cin, 3, 3}, Wave);
  std::vector<std::vector<float>> w;
  for (std::size_t i = 0; i < couts.size(); ++i)
    w.push_back(Floats(static_cast<std::size_t>(couts[i] * cin), 0.5f, static_cast<int>(i) + 1));
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4,3,3] x, float[16,4,1,1] w0 = )" + test::FloatList(w[0]) + R"(, float[8,4,1,1] w1 = )" + test::FloatList(w[1]) +
                           R"(, float[24,4,1,1] w2 = )" + test::FloatList(w[2]) + R"() => (float[2,48,3,3] y) {
      a = Conv (x, w0)
      b = Conv (x, w1)
      c = Conv (x, w2)
      y = Concat <axis = 1> (a, b, c)
    })";
  PlanRun fused = CheckBoth(text, {x}, ConcatenatedPointwise(x, w, couts), 1e-5);
  INFO(test::StepList(fused));
  const bool blocked_parts = test::StepsContaining(fused, "Conv_2 jit_1x1:avx2 aBcd8b") == 1;
  CHECK(test::StepsStartingWith(fused, "concat Concat_3 onnxfuse:concat_copy aBcd8b") == (blocked_parts ? 1 : 0));
}

TEST_CASE("a Concat read only by convolutions is never copied: each reader runs per part and accumulates",
          "[backend_ops]") {
  // SqueezeNet's fire module: two convolutions (1x1 and 3x3) of a squeeze
  // output, concatenated, read by the next 1x1 conv (+ Relu). With a residual
  // Add after the reader (a `sum` post-op already), the concat is made after all.
  std::vector<float> bn = Floats(12, 0.5f, 5), wr = Floats(12 * 4, 0.3f, 6);
  auto model = [&](bool residual) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + FireInputs() + R"(, float[12] bn = )" + test::FloatList(bn) + R"(, float[12,4,1,1] wr = )" +
           test::FloatList(wr) + R"() => (float[1,12,9,9] y) {)" + kFireModule + R"(
        n = Conv (cat, wn, bn)
        )" + (residual ? "side = Conv (x, wr)\n        y = Add (n, side)" : "y = Relu (n)") + R"(
      })";
  };
  Tensor x = TensorFrom({1, 4, 9, 9}, Wave);
  for (bool residual : {false, true}) {
    INFO((residual ? "reader with a residual Add" : "reader with a Relu"));
    Graph graph = test::GraphFromText(model(residual));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsContaining(fused, "(Concat_6 part ") == (residual ? 0 : 2));
    CHECK(test::StepsStartingWith(fused, "concat ") == (residual ? 1 : 0));
  }
}

TEST_CASE("a Concat read by a MaxPool is pooled per part, the pooled parts feed the next Conv unconcatenated",
          "[backend_ops]") {
  // SqueezeNet between stages: fire module -> Concat -> MaxPool (3x3, stride
  // 2, ceil_mode) -> squeeze conv. With a Flatten reading the pool instead,
  // the pooled parts are concatenated (smaller than the unpooled concat).
  auto model = [&](bool conv_reads_pool) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + FireInputs() + R"() => (float[1,)" + (conv_reads_pool ? "12,4,4" : "640") + R"(] y) {)" + kFireModule + R"(
        p = MaxPool <kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1> (cat)
        )" + (conv_reads_pool ? "n = Conv (p, wn)\n        y = Relu (n)" : "y = Flatten (p)") + R"(
      })";
  };
  Tensor x = TensorFrom({1, 4, 9, 9}, Wave);
  for (bool conv_reads_pool : {true, false}) {
    INFO((conv_reads_pool ? "a Conv reads the pool" : "a Flatten reads the pool"));
    Graph graph = test::GraphFromText(model(conv_reads_pool));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "pooling MaxPool_7 (Concat_6 part ") == 2);
    CHECK(test::StepsContaining(fused, "(Concat_6+MaxPool_7 part ") == (conv_reads_pool ? 2 : 0));  // conv steps
    CHECK(test::StepsStartingWith(fused, "concat ") == (conv_reads_pool ? 0 : 1));
  }
}

TEST_CASE("channel-blocked sources concatenated along a spatial axis are made plain, not concatenated by ref",
          "[concat]") {
  // Difftest seed 37113456: oneDNN 2.6's reference concat of [1,24,1] and
  // [1,24,3] in aBc16b wrote acB16b, and its binary Add with a Relu post-op on
  // that layout left channels 8-15 of the last two positions at zero.
  std::string weights;
  for (int i = 0; i < 24 * 3; ++i) weights += (i ? ", " : "") + std::to_string(0.5 + 0.01 * i);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1] x, float[1,24,3] w = {)" + weights + R"(}) => (float[1,24,4] y) {
      t = ConvTranspose <kernel_shape = [3]> (x, w)
      m = GlobalAveragePool (t)
      c = Concat <axis = 2> (m, t)
      s = Add (c, c)
      y = Relu (s)
    })";
  const Tensor x = test::TensorFrom({1, 1, 1}, [](std::int64_t) { return 0.75f; });
  std::vector<double> expected;  // t[ch][k] = 0.75 w[ch][k]; y = 2 max(0, [mean_k t, t[ch][0..2]])
  for (int ch = 0; ch < 24; ++ch) {
    double mean = 0;
    for (int k = 0; k < 3; ++k) mean += 0.75 * (0.5 + 0.01 * (ch * 3 + k)) / 3;
    expected.push_back(2 * mean);
    for (int k = 0; k < 3; ++k) expected.push_back(2 * 0.75 * (0.5 + 0.01 * (ch * 3 + k)));
  }
  const PlanRun fused = CheckBoth(text, {x}, expected, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsContaining(fused, "ref:") == 0);
}
