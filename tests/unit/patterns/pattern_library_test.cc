// The built-in library, conv families: ConvBn, ConvBnRelu, ConvBnClip,
// ConvBnHardSigmoidMul / ConvBnHardSwish, ConvBnSiLU, the residual tails
// (ConvBnAddRelu, ConvAddRelu, ConvBnAdd) and AddRelu. Every pattern has a
// positive case in torch's export spelling (exact groups; the fused model
// builds and passes the checker; dumped for tests/e2e/pattern_numerics.sh) and
// a near-miss whose reported reason is asserted. Helpers: pattern_library.h.
#include "pattern_library.h"

using namespace onnxfuse;
using namespace onnxfuse::test;

namespace {

// x [1,3,6,6] -> Conv 3x3 (3 -> 4 channels, with bias) -> BN "n"; the tail is the test's.
const Strings kConvBnInits = Concat({Init("w", {4, 3, 3, 3}), Init("cb", {4}, -0.5, 0.5)}, BnInits("bn", 4));
const std::string kConvBn = "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  " + Bn("n", "c", "bn");
const std::string kSig = "(float[1,3,6,6] x) => (float[1,4,6,6] y)";

// A residual block: x [1,4,6,6] -> Conv 3x3 (4 -> 4) -> BN "n"; the tail adds x.
const Strings kResInits = Concat({Init("w", {4, 4, 3, 3})}, BnInits("bn", 4));
const std::string kResConvBn = "  c = Conv " + ConvAttrs(3) + " (x, w)\n  " + Bn("n", "c", "bn");
const std::string kResSig = "(float[1,4,6,6] x) => (float[1,4,6,6] y)";

}  // namespace

TEST_CASE("ConvBn: Conv + BatchNormalization, with and without the conv bias", "[pattern_library]") {
  SECTION("with bias") {
    auto f = FuseText(Model(kSig, kConvBnInits, "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  " + Bn("y", "c", "bn")));
    CHECK(PatternGroups(f) == Strings{"ConvBn: Conv_0, BatchNormalization_1"});
    CheckPositive("ConvBn", f);
  }
  SECTION("without bias: the writer calls the variant without B") {
    auto f = FuseText(Model(kSig, kConvBnInits, "  c = Conv " + ConvAttrs(3) + " (x, w)\n  " + Bn("y", "c", "bn")));
    CHECK(PatternGroups(f) == Strings{"ConvBn: Conv_0, BatchNormalization_1"});
    CHECK(BuildFusedModel(f.graph, f.plan).function_of_group[0] == "ConvBn_no_B");
    CheckPositive("ConvBn_no_bias", f);
  }
  SECTION("near-miss: training-mode BatchNormalization (opset 15: training_mode=1 and the running statistics)") {
    auto f = FuseText(Model(kSig, kConvBnInits,
                            "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  " +
                                Bn("y, rm, rv", "c", "bn", ", training_mode = 1"),
                            15));
    CHECK(PatternGroups(f).empty());
    // The matcher checks outputs before attributes: a valid training BN writes running mean/var.
    CHECK(NearMiss(f, "ConvBn", "BatchNormalization_1") ==
          "output_mismatch at BatchNormalization_1: 'BatchNormalization_1' also writes 'rm' (output 1), which the "
          "pattern does not cover");
  }
}

TEST_CASE("ConvBnRelu: Conv + BatchNormalization + Relu", "[pattern_library]") {
  SECTION("a strided conv") {
    auto f = FuseText(Model("(float[1,3,6,6] x) => (float[1,4,3,3] y)", kConvBnInits,
                            "  c = Conv " + ConvAttrs(3, 1, 2) + " (x, w, cb)\n  " + Bn("n", "c", "bn") +
                                "  y = Relu (n)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnRelu: Conv_0, BatchNormalization_1, Relu_2"});
    CheckPositive("ConvBnRelu", f);
  }
  SECTION("near-miss: the BN output is also a graph output; ConvBn takes the conv") {
    auto f = FuseText(Model("(float[1,3,6,6] x) => (float[1,4,6,6] y, float[1,4,6,6] n)", kConvBnInits,
                            kConvBn + "  y = Relu (n)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBn: Conv_0, BatchNormalization_1"});
    CHECK(NearMiss(f, "ConvBnRelu", "Relu_2") ==
          "intermediate_used_outside at BatchNormalization_1: intermediate 'n' of 'BatchNormalization_1' is a "
          "graph output");
  }
}

TEST_CASE("ConvBnClip: ReLU6 with bounds from Constant nodes or initializers", "[pattern_library]") {
  SECTION("Constant nodes, as torch exports nn.ReLU6 (they stay outside the group)") {
    auto f = FuseText(Model(kSig, kConvBnInits,
                            kConvBn +
                                "  lo = Constant <value = float {0.0}> ()\n"
                                "  hi = Constant <value = float {6.0}> ()\n"
                                "  y = Clip (n, lo, hi)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnClip: Conv_0, BatchNormalization_1, Clip_4"});
    CheckPositive("ConvBnClip", f);
  }
  SECTION("initializers, and any bounds") {
    auto f = FuseText(Model(kSig, Concat(kConvBnInits, {"float lo = {-1.0}", "float hi = {0.5}"}),
                            kConvBn + "  y = Clip (n, lo, hi)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnClip: Conv_0, BatchNormalization_1, Clip_2"});
    CheckPositive("ConvBnClip_initializers", f);
  }
  SECTION("near-miss: a bound computed at run time; ConvBn takes the conv") {
    auto f = FuseText(Model("(float[1,3,6,6] x, float hi) => (float[1,4,6,6] y)", Concat(kConvBnInits, {"float lo = {0.0}"}),
                            kConvBn + "  y = Clip (n, lo, hi)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBn: Conv_0, BatchNormalization_1"});
    CHECK(NearMiss(f, "ConvBnClip", "Clip_2") ==
          "not_constant at Clip_2: max ('hi') is not a constant: it is a graph input");
  }
}

TEST_CASE("hardswish: ConvBnHardSigmoidMul (opset 13) and ConvBnHardSwish (opset 14+)", "[pattern_library]") {
  const std::string hard_sigmoid_mul = "  h = HardSigmoid <alpha = 0.1666666716337204> (n)\n  y = Mul (n, h)\n";
  SECTION("opset 13: HardSigmoid(alpha = 1/6) and Mul, as torch exports nn.Hardswish") {
    auto f = FuseText(Model(kSig, kConvBnInits, kConvBn + hard_sigmoid_mul));
    CHECK(PatternGroups(f) ==
          Strings{"ConvBnHardSigmoidMul: Conv_0, BatchNormalization_1, HardSigmoid_2, Mul_3"});
    CheckPositive("ConvBnHardSigmoidMul", f);
  }
  SECTION("opset 17: the HardSwish op, BN with training_mode = 0 written out (torch's opset-17 export)") {
    auto f = FuseText(Model(kSig, kConvBnInits,
                            "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  " + Bn("n", "c", "bn", ", training_mode = 0") +
                                "  y = HardSwish (n)\n",
                            17));
    CHECK(PatternGroups(f) == Strings{"ConvBnHardSwish: Conv_0, BatchNormalization_1, HardSwish_2"});
    CheckPositive("ConvBnHardSwish", f);
  }
  SECTION("near-miss: a HardSigmoid that is not hardswish's; ConvBn takes the conv") {
    auto f = FuseText(Model(kSig, kConvBnInits, kConvBn + "  h = HardSigmoid <alpha = 0.2> (n)\n  y = Mul (n, h)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBn: Conv_0, BatchNormalization_1"});
    CHECK(NearMiss(f, "ConvBnHardSigmoidMul", "Mul_3") ==
          "attribute_mismatch at HardSigmoid_2: 'HardSigmoid_2' has alpha=0.2; the pattern requires 0.166667");
  }
  SECTION("near-miss: training_mode = 1 at opset 17") {
    auto f = FuseText(Model(kSig, kConvBnInits,
                            "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  " +
                                Bn("n, rm, rv", "c", "bn", ", training_mode = 1") + "  y = HardSwish (n)\n",
                            17));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "ConvBnHardSwish", "HardSwish_2") ==
          "output_mismatch at BatchNormalization_1: 'BatchNormalization_1' also writes 'rm' (output 1), which the "
          "pattern does not cover");
  }
}

TEST_CASE("ConvBnSiLU: Conv + BatchNormalization + Sigmoid + Mul", "[pattern_library]") {
  SECTION("the Mul reads the BN output and the Sigmoid's, in either order") {
    for (const char* mul : {"Mul (n, s)", "Mul (s, n)"}) {
      auto f = FuseText(Model(kSig, kConvBnInits, kConvBn + "  s = Sigmoid (n)\n  y = " + mul + "\n"));
      CHECK(PatternGroups(f) == Strings{"ConvBnSiLU: Conv_0, BatchNormalization_1, Sigmoid_2, Mul_3"});
      CheckPositive(std::string("ConvBnSiLU") + (mul[5] == 'n' ? "" : "_swapped"), f);
    }
  }
  SECTION("near-miss: BN statistics computed at run time; no conv pattern applies") {
    auto f = FuseText(Model("(float[1,3,6,6] x, float[4] bn_m) => (float[1,4,6,6] y)",
                            {Init("w", {4, 3, 3, 3}), Init("cb", {4}), Init("bn_s", {4}), Init("bn_t", {4}),
                             Init("bn_v", {4}, 0.5, 2.0)},
                            kConvBn + "  s = Sigmoid (n)\n  y = Mul (n, s)\n"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "ConvBnSiLU", "Mul_3") ==
          "not_constant at BatchNormalization_1: mean ('bn_m') is not a constant: it is a graph input");
  }
}

TEST_CASE("residual: ConvBnAddRelu, ConvAddRelu, ConvBnAdd", "[pattern_library]") {
  SECTION("ConvBnAddRelu: ResNet's block tail, the shortcut on either side") {
    auto f = FuseText(Model(kResSig, kResInits, kResConvBn + "  a = Add (n, x)\n  y = Relu (a)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnAddRelu: Conv_0, BatchNormalization_1, Add_2, Relu_3"});
    CheckPositive("ConvBnAddRelu", f);
  }
  SECTION("ConvBnAddRelu with a downsample branch: ConvBn") {
    auto f = FuseText(Model(kResSig, Concat(Concat(kResInits, {Init("wd", {4, 4, 1, 1})}), BnInits("bd", 4)),
                            kResConvBn + "  cd = Conv " + ConvAttrs(1) + " (x, wd)\n  " + Bn("nd", "cd", "bd") +
                                "  a = Add (n, nd)\n  y = Relu (a)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnAddRelu: Conv_0, BatchNormalization_1, Add_4, Relu_5",
                                      "ConvBn: Conv_2, BatchNormalization_3"});
    CheckPositive("ConvBnAddRelu_downsample", f);
  }
  SECTION("near-miss: the sum is also a graph output; ConvBnAdd takes the rest") {
    auto f = FuseText(Model("(float[1,4,6,6] x) => (float[1,4,6,6] y, float[1,4,6,6] a)", kResInits,
                            kResConvBn + "  a = Add (n, x)\n  y = Relu (a)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnAdd: Conv_0, BatchNormalization_1, Add_2"});
    CHECK(NearMiss(f, "ConvBnAddRelu", "Relu_3") ==
          "intermediate_used_outside at Add_2: intermediate 'a' of 'Add_2' is a graph output");
  }
  SECTION("ConvAddRelu: BN already folded into the conv") {
    auto f = FuseText(Model(kResSig, {Init("w", {4, 4, 3, 3}), Init("cb", {4})},
                            "  c = Conv " + ConvAttrs(3) + " (x, w, cb)\n  a = Add (x, c)\n  y = Relu (a)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvAddRelu: Conv_0, Add_1, Relu_2"});
    CheckPositive("ConvAddRelu", f);
  }
  SECTION("near-miss of ConvAddRelu: weights computed at run time; AddRelu takes the tail") {
    auto f = FuseText(Model("(float[1,4,6,6] x, float[4,4,3,3] w) => (float[1,4,6,6] y)", {},
                            "  c = Conv " + ConvAttrs(3) + " (x, w)\n  a = Add (x, c)\n  y = Relu (a)\n"));
    CHECK(PatternGroups(f) == Strings{"AddRelu: Add_1, Relu_2"});
    CHECK(NearMiss(f, "ConvAddRelu", "Relu_2") == "not_constant at Conv_0: W ('w') is not a constant: it is a graph input");
  }
  SECTION("ConvBnAdd: the linear bottleneck's residual (MobileNetV2/V3, EfficientNet)") {
    auto f = FuseText(Model(kResSig, kResInits, kResConvBn + "  y = Add (x, n)\n"));
    CHECK(PatternGroups(f) == Strings{"ConvBnAdd: Conv_0, BatchNormalization_1, Add_2"});
    CheckPositive("ConvBnAdd", f);
  }
  SECTION("near-miss of ConvBnAdd: the conv output is read outside") {
    auto f = FuseText(Model("(float[1,4,6,6] x) => (float[1,4,6,6] y, float[1,4,6,6] z)", kResInits,
                            kResConvBn + "  y = Add (x, n)\n  z = Sigmoid (c)\n"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "ConvBnAdd", "Add_2") ==
          "intermediate_used_outside at Conv_0: intermediate 'c' is used by node 'Sigmoid_3' outside the match");
  }
}

TEST_CASE("AddRelu: Add + Relu, broadcasting allowed", "[pattern_library]") {
  SECTION("a residual sum and a per-channel bias") {
    auto f = FuseText(Model("(float[1,4,6,6] x, float[1,4,6,6] r) => (float[1,4,6,6] y, float[1,4,6,6] z)",
                            {Init("t", {1, 4, 1, 1})},
                            "  a = Add (x, r)\n  y = Relu (a)\n  b = Add (t, x)\n  z = Relu (b)\n"));
    CHECK(PatternGroups(f) == Strings{"AddRelu: Add_0, Relu_1", "AddRelu: Add_2, Relu_3"});
    CheckPositive("AddRelu", f);
  }
  SECTION("near-miss: the sum is read outside") {
    auto f = FuseText(Model("(float[1,4,6,6] x, float[1,4,6,6] r) => (float[1,4,6,6] y, float[1,4,6,6] z)", {},
                            "  a = Add (x, r)\n  y = Relu (a)\n  z = Sigmoid (a)\n"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "AddRelu", "Relu_1") ==
          "intermediate_used_outside at Add_0: intermediate 'a' is used by node 'Sigmoid_2' outside the match");
  }
}
