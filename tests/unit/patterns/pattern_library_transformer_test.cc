// The built-in library, transformer families: decomposed LayerNormalization
// and Gelu (recognized as their single-op forms), MatMul + Add (+ Gelu, + a
// residual Add). Positive cases in torch 1.13's spelling at opset 13 (ViT,
// ConvNeXt) and 17 (LayerNormalization a single op), near-misses with reasons.
#include "pattern_library.h"

using namespace onnxfuse;
using namespace onnxfuse::test;

namespace {

// torch's F.layer_norm over the last axis at opset 13, reading x [1,5,8], writing y.
std::string LayerNormBody(const std::string& axes = "[-1]", const std::string& exponent = "2.0") {
  return "  m = ReduceMean <axes = " + axes + "> (x)\n  d = Sub (x, m)\n"
         "  two = Constant <value = float {" + exponent + "}> ()\n  p = Pow (d, two)\n"
         "  v = ReduceMean <axes = " + axes + "> (p)\n"
         "  eps = Constant <value = float {0.000001}> ()\n  ve = Add (v, eps)\n  sd = Sqrt (ve)\n"
         "  n = Div (d, sd)\n  sc = Mul (n, ln_s)\n  y = Add (sc, ln_b)\n";
}
const Strings kLayerNormInits = {Init("ln_s", {8}, 0.5, 1.5), Init("ln_b", {8}, -0.2, 0.2)};
const std::string kLayerNormMembers =
    "LayerNormalization: ReduceMean_0, Sub_1, Pow_3, ReduceMean_4, Add_6, Sqrt_7, Div_8, Mul_9, Add_10";

// A Linear layer on x [1,5,8] as torch exports it for rank-3 inputs: MatMul, then Add(bias, .).
const Strings kLinearInits = {Init("w", {8, 16}), Init("b", {16})};
const std::string kLinear = "  mm = MatMul (x, w)\n  h = Add (b, mm)\n";

}  // namespace

TEST_CASE("LayerNormalization: torch's decomposed layer norm at opset 13", "[pattern_library]") {
  SECTION("ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add; the Constant nodes stay outside") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", kLayerNormInits, LayerNormBody()));
    CHECK(PatternGroups(f) == Strings{kLayerNormMembers});
    CheckPositive("LayerNormalization", f);
  }
  SECTION("axes written as the last axis' index") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", kLayerNormInits, LayerNormBody("[2]")));
    CHECK(PatternGroups(f) == Strings{kLayerNormMembers});
  }
  SECTION("near-miss: normalized over another axis") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", kLayerNormInits, LayerNormBody("[1]")));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "LayerNormalization", "Add_10") ==
          "not_last_axis at ReduceMean_0: axes is [1], not the last axis of X ('x') [1,5,8]");
  }
  SECTION("near-miss: another exponent") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", kLayerNormInits, LayerNormBody("[-1]", "3.0")));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "LayerNormalization", "Add_10") ==
          "constant_mismatch at Pow_3: 'Pow_3' reads 'two' = 3 (FLOAT, rank 0); the pattern expects the "
          "constant 2 (FLOAT)");
  }
  SECTION("opset 17: LayerNormalization is one op, nothing to recognize") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", kLayerNormInits,
                            "  y = LayerNormalization <axis = -1, epsilon = 0.000001> (x, ln_s, ln_b)\n", 17));
    CHECK(PatternGroups(f).empty());
  }
}

TEST_CASE("Gelu: torch's decomposed erf Gelu", "[pattern_library]") {
  SECTION("Div/Erf/Add/Mul/Mul; the three constants are part of the function") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", {}, GeluText("x", "y")));
    CHECK(PatternGroups(f) == Strings{"Gelu: Div_1, Erf_2, Add_4, Mul_5, Mul_7"});
    for (const auto& group : f.plan.groups)
      if (group.call) CHECK(group.call->inputs.size() == 1);  // X only
    CheckPositive("Gelu", f);
  }
  SECTION("near-miss: another constant") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,8] y)", {}, GeluText("x", "y", "0.6")));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "Gelu", "Mul_7") ==
          "constant_mismatch at Mul_7: 'Mul_7' reads 'half' = 0.6 (FLOAT, rank 0); the pattern expects the "
          "constant 0.5 (FLOAT)");
  }
}

TEST_CASE("MatMulAddGelu: a transformer MLP's first half", "[pattern_library]") {
  SECTION("opset 13 (ViT)") {
    auto f = FuseText(Model("(float[1,5,8] x) => (float[1,5,16] y)", kLinearInits, kLinear + GeluText("h", "y")));
    CHECK(PatternGroups(f) == Strings{"MatMulAddGelu: MatMul_0, Add_1, Div_3, Erf_4, Add_6, Mul_7, Mul_9"});
    CheckPositive("MatMulAddGelu", f);
  }
  SECTION("opset 17 (ConvNeXt): after a LayerNormalization op") {
    auto f = FuseText(Model("(float[1,5,8] x0) => (float[1,5,16] y)", Concat(kLayerNormInits, kLinearInits),
                            "  x = LayerNormalization <axis = -1, epsilon = 0.000001> (x0, ln_s, ln_b)\n" + kLinear +
                                GeluText("h", "y"),
                            17));
    CHECK(PatternGroups(f) == Strings{"MatMulAddGelu: MatMul_1, Add_2, Div_4, Erf_5, Add_7, Mul_8, Mul_10"});
    CheckPositive("MatMulAddGelu_opset17", f);
  }
  SECTION("near-miss: weights computed at run time; Gelu alone") {
    auto f = FuseText(Model("(float[1,5,8] x, float[8,16] w) => (float[1,5,16] y)", {Init("b", {16})},
                            kLinear + GeluText("h", "y")));
    CHECK(PatternGroups(f) == Strings{"Gelu: Div_3, Erf_4, Add_6, Mul_7, Mul_9"});
    CHECK(NearMiss(f, "MatMulAddGelu", "Mul_9") ==
          "not_constant at MatMul_0: W ('w') is not a constant: it is a graph input");
  }
}

TEST_CASE("MatMulAdd and MatMulAddAdd: Linear layers", "[pattern_library]") {
  SECTION("MatMulAdd: the bias first, as torch writes it") {
    auto f = FuseText(
        Model("(float[1,5,8] x) => (float[1,5,16] y)", kLinearInits, "  mm = MatMul (x, w)\n  y = Add (b, mm)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAdd: MatMul_0, Add_1"});
    CheckPositive("MatMulAdd", f);
  }
  SECTION("near-miss of MatMulAdd: a product of two activations (attention scores)") {
    auto f = FuseText(Model("(float[1,5,8] q, float[1,8,5] k, float[1,5,5] mask) => (float[1,5,5] y)", {},
                            "  s = MatMul (q, k)\n  y = Add (s, mask)\n"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "MatMulAdd", "Add_1") == "not_constant at MatMul_0: W ('k') is not a constant: it is a graph input");
  }
  SECTION("MatMulAddAdd: a Linear layer into a residual sum (ViT's MLP output)") {
    auto f = FuseText(Model("(float[1,5,8] x, float[1,5,16] r) => (float[1,5,16] y)", kLinearInits,
                            kLinear + "  y = Add (r, h)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAddAdd: MatMul_0, Add_1, Add_2"});
    CheckPositive("MatMulAddAdd", f);
  }
  SECTION("near-miss of MatMulAddAdd: the biased product is a graph output; MatMulAdd takes it") {
    auto f = FuseText(Model("(float[1,5,8] x, float[1,5,16] r) => (float[1,5,16] y, float[1,5,16] h)", kLinearInits,
                            kLinear + "  y = Add (r, h)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAdd: MatMul_0, Add_1"});
    CHECK(NearMiss(f, "MatMulAddAdd", "Add_2") ==
          "intermediate_used_outside at Add_1: intermediate 'h' of 'Add_1' is a graph output");
  }
}

TEST_CASE("SoftmaxLog: log-probabilities of a classifier head", "[pattern_library]") {
  const Strings inits = {Init("w", {8, 10}), Init("b", {10})};
  const std::string head = "  mm = MatMul (x, w)\n  z = Add (mm, b)\n";
  SECTION("Softmax over the last axis, then Log") {
    auto f = FuseText(Model("(float[2,8] x) => (float[2,10] y)", inits, head + "  p = Softmax <axis = 1> (z)\n  y = Log (p)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAdd: MatMul_0, Add_1", "SoftmaxLog: Softmax_2, Log_3"});
    CheckPositive("SoftmaxLog", f);
  }
  SECTION("the axis left at its default") {
    auto f = FuseText(Model("(float[2,8] x) => (float[2,10] y)", inits, head + "  p = Softmax (z)\n  y = Log (p)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAdd: MatMul_0, Add_1", "SoftmaxLog: Softmax_2, Log_3"});
  }
  SECTION("near-miss: the probabilities are an output too") {
    auto f = FuseText(Model("(float[2,8] x) => (float[2,10] y, float[2,10] p)", inits,
                            head + "  p = Softmax <axis = 1> (z)\n  y = Log (p)\n"));
    CHECK(PatternGroups(f) == Strings{"MatMulAdd: MatMul_0, Add_1"});
  }
}
