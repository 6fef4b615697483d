// Post-op chains (src/backend/lower/core/chain.cc, backend/lower/core/chain_emit.cc) that oneDNN
// 2.6.3 computes wrongly when given as they are: two eltwise post-ops of one
// algorithm with different parameters in one primitive (the second runs with
// the first one's alpha and beta; ../shared/probes/onednn_same_alg_postops.cc).
// Consecutive linear steps are merged into one; other repeats end the
// primitive's post-ops there. Each graph is the minimal form of a wrong output
// found on real models; every one failed before the fix.
#include <catch2/catch.hpp>

#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::DimsText;
using test::FloatList;
using test::Floats;

namespace {

// A model of x [1,16,12,12] -> Conv (`conv_attrs`, weights [16, 16/group, k, k]) -> `tail`,
// with the scalar constants a = 2.3 and c = 0.5 and a per-channel p [16,1,1].
std::string ConvModel(std::int64_t k, std::int64_t group, const std::string& conv_attrs, const std::string& tail) {
  const std::vector<std::int64_t> w = {16, 16 / group, k, k};
  std::vector<float> per_channel = Floats(16, 1.f, 7);
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
         "g (float[1,16,12,12] x, float[" + DimsText(w) + "] w = " +
         FloatList(Floats(static_cast<std::size_t>(w[0] * w[1] * w[2] * w[3]), 0.6f, 3)) +
         ", float a = {2.3}, float c = {0.5}, float[1] a1 = {0.94}, float[1] c1 = {0.5}, float[16,1,1] p = " +
         FloatList(per_channel) + ") => (float[1,16,12,12] y) {\n  t = Conv <" + conv_attrs + "> (x, w)\n" + tail +
         "}";
}

Tensor Input(std::vector<std::int64_t> dims) {
  return test::TensorFrom(std::move(dims), [](std::int64_t i) { return 3.f * test::Wave(7 * i + 1); }, "x");
}

void CheckChain(const std::string& text, int expected_primitives) {
  INFO(text);
  Graph graph = test::GraphFromText(text);
  test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Input(graph.value(graph.inputs()[0]).type.dims)}, 1e-5);
  INFO(test::StepList(fused));
  CHECK(fused.stats.kernels - fused.stats.reorders == expected_primitives);
}

}  // namespace

TEST_CASE("two scalar affine steps after a convolution merge into one linear post-op", "[post_op_chain]") {
  const std::string pads = "pads = [1, 1, 1, 1]";
  SECTION("Conv 3x3, Mul, Add") { CheckChain(ConvModel(3, 1, pads, "  m = Mul (t, a)\n  y = Add (m, c)\n"), 1); }
  SECTION("Conv 3x3, Add, Mul") { CheckChain(ConvModel(3, 1, pads, "  m = Add (t, c)\n  y = Mul (m, a)\n"), 1); }
  SECTION("Conv 1x1, Mul, Add") { CheckChain(ConvModel(1, 1, "group = 1", "  m = Mul (t, a)\n  y = Add (m, c)\n"), 1); }
  SECTION("depthwise Conv, Mul with the constant first, Add of [1]") {
    CheckChain(ConvModel(3, 16, "group = 16, " + pads, "  m = Mul (a1, t)\n  y = Add (m, c1)\n"), 1);
  }
  SECTION("Conv, Sub with the constant first, Div, Mul") {
    CheckChain(ConvModel(3, 1, pads, "  m = Sub (c, t)\n  d = Div (m, a)\n  y = Mul (d, c1)\n"), 1);
  }
}

TEST_CASE("repeated eltwise algorithms with other parameters end a primitive's post-ops", "[post_op_chain]") {
  const std::string pads = "pads = [1, 1, 1, 1]";
  SECTION("linear, relu, linear") {
    CheckChain(ConvModel(3, 1, pads, "  m = Mul (t, a)\n  r = Relu (m)\n  y = Add (r, c)\n"), 2);
  }
  SECTION("clip, clip") {
    CheckChain(ConvModel(1, 1, "group = 1",
                         "  l = Constant <value = float {-1.0}> ()\n  h = Constant <value = float {2.0}> ()\n"
                         "  z = Constant <value = float {0.0}> ()\n  o = Constant <value = float {1.0}> ()\n"
                         "  k = Clip (t, l, h)\n  y = Clip (k, z, o)\n"),
               2);
  }
  SECTION("LeakyRelu 0.1, LeakyRelu 0.5") {
    CheckChain(ConvModel(1, 1, "group = 1",
                         "  k = LeakyRelu <alpha = 0.1> (t)\n  y = LeakyRelu <alpha = 0.5> (k)\n"),
               2);
  }
  SECTION("HardSigmoid, then a scalar Mul") {
    CheckChain(ConvModel(1, 1, "group = 1", "  k = HardSigmoid (t)\n  y = Mul (k, a)\n"), 2);
  }
}

TEST_CASE("a binary anchor's chain keeps one linear step per primitive", "[post_op_chain]") {
  SECTION("x [1,8,32]: Mul, Div, Sub by scalars") {
    const std::string text = R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,8,32] x, float t = {10.0}, float d = {2.3}, float s = {0.5}) => (float[1,8,32] y) {
        m = Mul (x, t)
        q = Div (m, d)
        y = Sub (q, s)
      })";
    CheckChain(text, 1);
  }
  SECTION("Sub with a per-channel constant first, then HardSigmoid") {
    // c - x runs as x - c, then linear(-1, 0) ahead of HardSigmoid's linear and clip.
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[1,16,12,12] x, float[16,1,1] p = " + FloatList(Floats(16, 1.f, 5)) +
                             ") => (float[1,16,12,12] y) {\n  m = Sub (p, x)\n  y = HardSigmoid (m)\n}";
    CheckChain(text, 1);
  }
}

// Graphs the differential tester shrank (scripts/difftest.sh), each wrong
// fused before its fix (src/backend/lower/core/onednn_limits.h says which oneDNN limit).
namespace {

void CheckText(const std::string& body, const std::string& inputs, const std::string& output) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + inputs + ") => (" + output + ") {\n" +
                           body + "}";
  INFO(text);
  Graph graph = test::GraphFromText(text);
  test::CheckFusedAgainstUnfused(graph, RandomInputs(graph), 1e-5);
}

}  // namespace

TEST_CASE("a binary step with post-ops is not run in place over partly filled channel blocks", "[post_op_chain]") {
  // A 1-D ConvTranspose to one channel gives nCw16c (nCw8c on AVX2) with 15 padded channels.
  const std::string inputs = "float[1,1,2] x, float[1,1,1] w = {0.5}, float[2] c = {2.0, 2.0}";
  CheckText("  t = ConvTranspose (x, w)\n  r = Relu (t)\n  a = Add (r, t)\n  y = Relu (a)\n", inputs,
            "float[1,1,2] y");
  CheckText("  t = ConvTranspose (x, w)\n  y = Sub (c, t)\n", inputs, "float[1,1,2] y");
  CheckText("  t = ConvTranspose (x, w)\n  h = HardSigmoid <alpha = 0.166666667, beta = 0.5> (t)\n"
            "  m = Mul (h, t)\n  y = Add (t, m)\n",
            inputs, "float[1,1,2] y");
}

TEST_CASE("a binary on [N>1, C, 1] takes no per-channel binary post-op", "[post_op_chain]") {
  const std::string inputs = "float[2,2,1] x, float k = {1.0}, float[2,1] c = {0.75, -0.625}";
  CheckText("  a = Add (x, x)\n  y = Div (a, c)\n", inputs, "float[2,2,1] y");
  CheckText("  a = Add (x, k)\n  y = Sub (a, c)\n", inputs, "float[2,2,1] y");
  CheckText("  a = Add (x, x)\n  y = Add (a, c)\n", inputs, "float[2,2,1] y");
}

TEST_CASE("a collapsed MatMul adds its residual in its own layout", "[post_op_chain]") {
  // The MatMul runs as [1, 1] x [1, 1]; its addend [1,1,1] was reordered into
  // that 2-D descriptor, which oneDNN refuses: an internal error.
  CheckText("  t = ConvTranspose (x, w)\n  m = MatMul (t, k)\n  y = Add (t, m)\n",
            "float[1,1,1] x, float[1,1,1] w = {0.5}, float[1,1] k = {0.5}", "float[1,1,1] y");
}

TEST_CASE("a binary reads both operands of a strided view in one descriptor", "[post_op_chain]") {
  // Conv (channels-last) -> Slice(H, step 2) is a view with strides
  // {8,1,8,2}; Add's result has oneDNN's {4,1,4,2}. Div(v, Add(v, c)) read
  // them with different offsets (found by the differential tester).
  CheckText("  t = Conv (x, w)\n  v = Slice (t, s, e, a, p)\n  u = Add (v, c)\n  y = Div (v, u)\n",
            "float[1,2,2,2] x, float[2,2,1,1] w = {0.5, 0.25, -0.5, 0.75}, int64[1] s = {0}, int64[1] e = {2}, "
            "int64[1] a = {2}, int64[1] p = {2}, float c = {0.756}",
            "float[1,2,1,2] y");
}
