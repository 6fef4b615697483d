// The built-in library, mobile families: whole inverted residual blocks
// (InvertedResidualBn*), 1x1 conv followed by 3x3 depthwise
// conv (PwDwConvBn*, one per activation spelling), squeeze-and-excitation
// (SE*), and the predicates they need: kernel_1x1, kernel_3x3, depthwise.
// Positive cases in torch's spelling (exact groups, checked fused model, dumped
// for tests/e2e/pattern_numerics.sh) and near-misses with their reasons.
#include "pattern_library.h"

using namespace onnxfuse;
using namespace onnxfuse::test;

namespace {

// Activation `act` reading `in`, writing `out`, as torch exports it; `k` names its helper values.
std::string Act(const std::string& act, const std::string& in, const std::string& out, const std::string& k) {
  if (act == "Relu") return "  " + out + " = Relu (" + in + ")\n";
  if (act == "Clip")
    return "  " + k + "_lo = Constant <value = float {0.0}> ()\n  " + k + "_hi = Constant <value = float {6.0}> ()\n  " +
           out + " = Clip (" + in + ", " + k + "_lo, " + k + "_hi)\n";
  if (act == "HardSigmoidMul")
    return "  " + k + "_h = HardSigmoid <alpha = 0.1666666716337204> (" + in + ")\n  " + out + " = Mul (" + in + ", " +
           k + "_h)\n";
  if (act == "HardSwish") return "  " + out + " = HardSwish (" + in + ")\n";
  if (act == "SiLU") return "  " + k + "_sig = Sigmoid (" + in + ")\n  " + out + " = Mul (" + in + ", " + k + "_sig)\n";
  if (act == "Sigmoid") return "  " + out + " = Sigmoid (" + in + ")\n";
  if (act == "HardSigmoid") return "  " + out + " = HardSigmoid <alpha = 0.1666666716337204> (" + in + ")\n";
  FAIL("unknown activation " << act);
  return "";
}

// An inverted residual block's first half: x [1,4,6,6] -> 1x1 Conv (4 -> 8) + BN + act
// -> depthwise Conv (8 channels, `dw_kernel`, group `group`, `dw_out` outputs) + BN + act.
std::string PwDw(const std::string& act, int pw_kernel = 1, int dw_kernel = 3, int group = 8, int dw_out = 8,
                 const std::string& extra_outputs = "") {
  std::string body = "  c1 = Conv " + ConvAttrs(pw_kernel) + " (x, w1)\n  " + Bn("b1", "c1", "p") +
                     Act(act, "b1", "a1", "p") + "  c2 = Conv " + ConvAttrs(dw_kernel, group) + " (a1, w2)\n  " +
                     Bn("b2", "c2", "d") + Act(act, "b2", "y", "d");
  Strings weights = {Init("w1", {8, 4, pw_kernel, pw_kernel}), Init("w2", {dw_out, 8 / group, dw_kernel, dw_kernel})};
  std::string sig = "(float[1,4,6,6] x) => (float[1," + std::to_string(dw_out) + ",6,6] y" + extra_outputs + ")";
  return Model(sig, Concat(Concat(weights, BnInits("p", 8)), BnInits("d", dw_out)), body, act == "HardSwish" ? 17 : 13);
}

// A whole inverted residual block: PwDw's two halves, then a 1x1 project Conv
// (8 -> 4) + BN, and with `residual` the Add of the block's input x, torch's
// operand order (the BN's output first).
std::string InvertedResidual(const std::string& act, bool residual, int dw_kernel = 3) {
  std::string body = "  c1 = Conv " + ConvAttrs(1) + " (x, w1)\n  " + Bn("b1", "c1", "p") + Act(act, "b1", "a1", "p") +
                     "  c2 = Conv " + ConvAttrs(dw_kernel, 8) + " (a1, w2)\n  " + Bn("b2", "c2", "d") +
                     Act(act, "b2", "a2", "d") + "  c3 = Conv " + ConvAttrs(1) + " (a2, w3)\n  " +
                     (residual ? Bn("b3", "c3", "q") + "  y = Add (b3, x)\n" : Bn("y", "c3", "q"));
  Strings weights = {Init("w1", {8, 4, 1, 1}), Init("w2", {8, 1, dw_kernel, dw_kernel}), Init("w3", {4, 8, 1, 1})};
  return Model("(float[1,4,6,6] x) => (float[1,4,6,6] y)",
               Concat(Concat(Concat(weights, BnInits("p", 8)), BnInits("d", 8)), BnInits("q", 4)), body,
               act == "HardSwish" ? 17 : 13);
}

// Squeeze-and-excitation on x [1,8,4,4]: GlobalAveragePool -> Conv 1x1 (8 -> 2, bias) -> `squeeze`
// -> Conv 1x1 (2 -> 8, bias) -> `gate` -> Mul(gate, x), torch's operand order.
std::string SE(const std::string& squeeze, const std::string& gate, const std::string& mul = "Mul (g, x)",
               const std::string& extra_inputs = "", const std::string& extra_outputs = "", bool w1_constant = true) {
  Strings inits = {Init("sb1", {2}), Init("sw2", {8, 2, 1, 1}), Init("sb2", {8})};
  if (w1_constant) inits.push_back(Init("sw1", {2, 8, 1, 1}));
  std::string body = "  p = GlobalAveragePool (x)\n  c1 = Conv " + ConvAttrs(1) + " (p, sw1, sb1)\n" +
                     Act(squeeze, "c1", "r", "q") + "  c2 = Conv " + ConvAttrs(1) + " (r, sw2, sb2)\n" +
                     Act(gate, "c2", "g", "e") + "  y = " + mul + "\n";
  return Model("(float[1,8,4,4] x" + extra_inputs + ") => (float[1,8,4,4] y" + extra_outputs + ")", inits, body);
}

}  // namespace

TEST_CASE("InvertedResidualBn*: expand, depthwise, project, with and without the residual, every spelling",
          "[pattern_library]") {
  struct Case {
    const char* act;
    const char* nodes;  // of the block without the residual
  };
  const std::vector<Case> cases = {
      {"Relu", "Conv_0, BatchNormalization_1, Relu_2, Conv_3, BatchNormalization_4, Relu_5, Conv_6, "
               "BatchNormalization_7"},
      {"Clip",  // the bounds' Constant nodes stay outside
       "Conv_0, BatchNormalization_1, Clip_4, Conv_5, BatchNormalization_6, Clip_9, Conv_10, BatchNormalization_11"},
      {"HardSigmoidMul", "Conv_0, BatchNormalization_1, HardSigmoid_2, Mul_3, Conv_4, BatchNormalization_5, "
                         "HardSigmoid_6, Mul_7, Conv_8, BatchNormalization_9"},
      {"HardSwish", "Conv_0, BatchNormalization_1, HardSwish_2, Conv_3, BatchNormalization_4, HardSwish_5, Conv_6, "
                    "BatchNormalization_7"},
  };
  for (const auto& c : cases)
    for (bool residual : {false, true}) {
      DYNAMIC_SECTION(c.act << (residual ? " with the residual" : "")) {
        const std::string name = std::string("InvertedResidualBn") + c.act + (residual ? "Add" : "");
        auto f = FuseText(InvertedResidual(c.act, residual));
        const std::string nodes = std::string(c.nodes);
        const std::size_t last = std::stoul(nodes.substr(nodes.rfind('_') + 1));
        CHECK(PatternGroups(f) ==
              Strings{name + ": " + nodes + (residual ? ", Add_" + std::to_string(last + 1) : std::string())});
        CheckPositive(name, f);
      }
    }
}

TEST_CASE("InvertedResidualBn* near-misses: SiLU, and a 5x5 depthwise kernel, fall back to smaller patterns",
          "[pattern_library]") {
  SECTION("SiLU (EfficientNet's blocks, which have squeeze-and-excitation): the first half as PwDwConvBnSiLU") {
    auto f = FuseText(InvertedResidual("SiLU", true));
    CHECK(PatternGroups(f) == Strings{"PwDwConvBnSiLU: Conv_0, BatchNormalization_1, Sigmoid_2, Mul_3, Conv_4, "
                                      "BatchNormalization_5, Sigmoid_6, Mul_7",
                                      "ConvBnAdd: Conv_8, BatchNormalization_9, Add_10"});
  }
  SECTION("a 5x5 depthwise kernel: the whole block all the same (the depthwise predicate has no kernel size)") {
    auto f = FuseText(InvertedResidual("Relu", true, 5));
    CHECK(PatternGroups(f) == Strings{"InvertedResidualBnReluAdd: Conv_0, BatchNormalization_1, Relu_2, Conv_3, "
                                      "BatchNormalization_4, Relu_5, Conv_6, BatchNormalization_7, Add_8"});
  }
}

TEST_CASE("PwDwConvBn*: 1x1 conv + BN + act, then 3x3 depthwise conv + BN + act, every spelling",
          "[pattern_library]") {
  struct Case {
    const char* act;
    Strings groups;
  };
  const std::vector<Case> cases = {
      {"Relu",
       {"PwDwConvBnRelu: Conv_0, BatchNormalization_1, Relu_2, Conv_3, BatchNormalization_4, Relu_5"}},
      {"Clip",  // the bounds' Constant nodes stay outside
       {"PwDwConvBnClip: Conv_0, BatchNormalization_1, Clip_4, Conv_5, BatchNormalization_6, Clip_9"}},
      {"HardSigmoidMul",
       {"PwDwConvBnHardSigmoidMul: Conv_0, BatchNormalization_1, HardSigmoid_2, Mul_3, Conv_4, BatchNormalization_5, "
        "HardSigmoid_6, Mul_7"}},
      {"HardSwish",
       {"PwDwConvBnHardSwish: Conv_0, BatchNormalization_1, HardSwish_2, Conv_3, BatchNormalization_4, HardSwish_5"}},
      {"SiLU",
       {"PwDwConvBnSiLU: Conv_0, BatchNormalization_1, Sigmoid_2, Mul_3, Conv_4, BatchNormalization_5, Sigmoid_6, "
        "Mul_7"}},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.act) {
      auto f = FuseText(PwDw(c.act));
      CHECK(PatternGroups(f) == c.groups);
      CheckPositive(std::string("PwDwConvBn") + c.act, f);
    }
  }
}

TEST_CASE("PwDwConvBn* near-misses fall back to the per-conv patterns", "[pattern_library]") {
  SECTION("a 5x5 depthwise kernel (MobileNetV3, EfficientNet): not_3x3") {
    auto f = FuseText(PwDw("Relu", 1, 5));
    CHECK(PatternGroups(f) == Strings{"ConvBnRelu: Conv_0, BatchNormalization_1, Relu_2",
                                      "ConvBnRelu: Conv_3, BatchNormalization_4, Relu_5"});
    CHECK(NearMiss(f, "PwDwConvBnRelu", "Relu_5") ==
          "not_3x3 at Conv_3: W2 ('w2') of shape [8,1,5,5] is not a 3x3 kernel (4-D, spatial dims 3, 3)");
  }
  SECTION("a 3x3 first conv (MobileNetV2's stem): not_1x1") {
    auto f = FuseText(PwDw("Clip", 3));
    CHECK(PatternGroups(f) == Strings{"ConvBnClip: Conv_0, BatchNormalization_1, Clip_4",
                                      "ConvBnClip: Conv_5, BatchNormalization_6, Clip_9"});
    CHECK(NearMiss(f, "PwDwConvBnClip", "Clip_9") ==
          "not_1x1 at Conv_0: W1 ('w1') of shape [8,4,3,3] is not a 1x1 kernel (spatial dims all 1)");
  }
  SECTION("a grouped conv that is not depthwise (RegNet): not_depthwise") {
    auto f = FuseText(PwDw("HardSigmoidMul", 1, 3, 4));
    CHECK(PatternGroups(f) == Strings{"ConvBnHardSigmoidMul: Conv_0, BatchNormalization_1, HardSigmoid_2, Mul_3",
                                      "ConvBnHardSigmoidMul: Conv_4, BatchNormalization_5, HardSigmoid_6, Mul_7"});
    CHECK(NearMiss(f, "PwDwConvBnHardSigmoidMul", "Mul_7") ==
          "not_depthwise at Conv_4: group2 4 with W2 ('w2') of shape [8,2,3,3] is not depthwise (needs W [M, "
          "1, ...] and group = M)");
  }
  SECTION("a channel multiplier of 2: not_depthwise") {
    auto f = FuseText(PwDw("SiLU", 1, 3, 8, 16));
    CHECK(PatternGroups(f) == Strings{"ConvBnSiLU: Conv_0, BatchNormalization_1, Sigmoid_2, Mul_3",
                                      "ConvBnSiLU: Conv_4, BatchNormalization_5, Sigmoid_6, Mul_7"});
    CHECK(NearMiss(f, "PwDwConvBnSiLU", "Mul_7") ==
          "not_depthwise at Conv_4: group2 8 with W2 ('w2') of shape [16,1,3,3] is not depthwise (needs W [M, "
          "1, ...] and group = M)");
  }
  SECTION("the expanded activation is read outside: intermediate_used_outside") {
    auto f = FuseText(PwDw("HardSwish", 1, 3, 8, 8, ", float[1,8,6,6] a1"));
    CHECK(PatternGroups(f) == Strings{"ConvBnHardSwish: Conv_0, BatchNormalization_1, HardSwish_2",
                                      "ConvBnHardSwish: Conv_3, BatchNormalization_4, HardSwish_5"});
    CHECK(NearMiss(f, "PwDwConvBnHardSwish", "HardSwish_5") ==
          "intermediate_used_outside at HardSwish_2: intermediate 'a1' of 'HardSwish_2' is a graph output");
  }
}

TEST_CASE("squeeze-and-excitation: SE<squeeze act><gate>, every combination", "[pattern_library]") {
  struct Case {
    const char* squeeze;
    const char* gate;
    const char* group;
  };
  const std::vector<Case> cases = {
      {"Relu", "Sigmoid", "SEReluSigmoid: GlobalAveragePool_0, Conv_1, Relu_2, Conv_3, Sigmoid_4, Mul_5"},
      {"Relu", "HardSigmoid", "SEReluHardSigmoid: GlobalAveragePool_0, Conv_1, Relu_2, Conv_3, HardSigmoid_4, Mul_5"},
      {"SiLU", "Sigmoid", "SESiLUSigmoid: GlobalAveragePool_0, Conv_1, Sigmoid_2, Mul_3, Conv_4, Sigmoid_5, Mul_6"},
      {"SiLU", "HardSigmoid",
       "SESiLUHardSigmoid: GlobalAveragePool_0, Conv_1, Sigmoid_2, Mul_3, Conv_4, HardSigmoid_5, Mul_6"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.squeeze << " " << c.gate) {
      auto f = FuseText(SE(c.squeeze, c.gate));
      CHECK(PatternGroups(f) == Strings{c.group});
      CheckPositive(std::string("SE") + c.squeeze + c.gate, f);
    }
  }
  SECTION("the block input on either side of the Mul") {
    auto f = FuseText(SE("Relu", "Sigmoid", "Mul (x, g)"));
    CHECK(PatternGroups(f) == Strings{cases[0].group});
  }
}

TEST_CASE("squeeze-and-excitation near-misses", "[pattern_library]") {
  SECTION("the gate multiplies another tensor than the pooled one: binding_conflict") {
    auto f = FuseText(SE("Relu", "Sigmoid", "Mul (g, z)", ", float[1,8,4,4] z"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "SEReluSigmoid", "Mul_5") ==
          "binding_conflict at GlobalAveragePool_0: 'GlobalAveragePool_0' reads 'x' where the pattern's 'X' is "
          "already 'z'");
  }
  SECTION("squeeze weights computed at run time: not_constant") {
    auto f = FuseText(SE("Relu", "HardSigmoid", "Mul (g, x)", ", float[2,8,1,1] sw1", "", false));
    CHECK(NearMiss(f, "SEReluHardSigmoid", "Mul_5") ==
          "not_constant at Conv_1: W1 ('sw1') is not a constant: it is a graph input");
  }
  SECTION("the squeeze conv's output is read outside") {
    auto f = FuseText(SE("SiLU", "Sigmoid", "Mul (g, x)", "", ", float[1,2,1,1] c1"));
    CHECK(NearMiss(f, "SESiLUSigmoid", "Mul_6") ==
          "intermediate_used_outside at Conv_1: intermediate 'c1' of 'Conv_1' is a graph output");
  }
  SECTION("the gate is a graph output") {
    auto f = FuseText(SE("SiLU", "HardSigmoid", "Mul (g, x)", "", ", float[1,8,1,1] g"));
    CHECK(NearMiss(f, "SESiLUHardSigmoid", "Mul_6") ==
          "intermediate_used_outside at HardSigmoid_5: intermediate 'g' of 'HardSigmoid_5' is a graph output");
  }
}

TEST_CASE("predicates kernel_1x1, kernel_3x3 and depthwise", "[pattern_library]") {
  auto pattern = [](const std::string& require) {
    auto patterns = ParsePatterns("#@ require: " + require +
                                      "\n<domain: \"ai.onnxfuse\", opset_import: [\"\" : 13]>\n"
                                      "P <group> (X, W) => (Y) {\n  c = Conv <group = @group> (X, W)\n  Y = Relu (c)\n}\n",
                                  "p.onnxtxt");
    REQUIRE(patterns.size() == 1);
    return patterns[0];
  };
  // x [1,C,5,5] -> Conv (W of shape w, no padding) -> Relu: P's outcome at the Relu.
  auto outcome = [](const Pattern& p, const std::vector<int>& w, int group, int channels) {
    std::string attrs = group ? "<group = " + std::to_string(group) + ">" : "";
    std::string sig = "(float[1," + std::to_string(channels) + ",5,5] x) => (float[1," + std::to_string(w[0]) + "," +
                      std::to_string(6 - w[2]) + "," + std::to_string(6 - w[3]) + "] y)";
    std::string body = "  c = Conv " + attrs + " (x, w)\n  y = Relu (c)\n";
    Graph graph = LoadModelProto(ParseModel(Model(sig, {Init("w", w)}, body)), "inline.onnx");
    std::vector<bool> claimed(graph.num_nodes(), false);
    auto result = MatchPattern(graph, p, NodeNamed(graph, "Relu_1"), claimed);
    return result.match ? std::string("match") : result.near_miss->reason + ": " + result.near_miss->detail;
  };
  auto k1 = pattern("kernel_1x1(W)");
  CHECK(outcome(k1, {4, 2, 1, 1}, 0, 2) == "match");
  CHECK(outcome(k1, {4, 2, 3, 1}, 0, 2) == "not_1x1: W ('w') of shape [4,2,3,1] is not a 1x1 kernel (spatial dims all 1)");
  auto k3 = pattern("kernel_3x3(W)");
  CHECK(outcome(k3, {4, 2, 3, 3}, 0, 2) == "match");
  CHECK(outcome(k3, {4, 2, 1, 1}, 0, 2) ==
        "not_3x3: W ('w') of shape [4,2,1,1] is not a 3x3 kernel (4-D, spatial dims 3, 3)");
  auto dw = pattern("depthwise(group, W)");
  CHECK(outcome(dw, {4, 1, 3, 3}, 4, 4) == "match");
  CHECK(outcome(dw, {1, 1, 3, 3}, 0, 1) == "match");  // absent group: 1, one channel
  CHECK(outcome(dw, {4, 1, 3, 3}, 2, 2) ==
        "not_depthwise: group 2 with W ('w') of shape [4,1,3,3] is not depthwise (needs W [M, 1, ...] and group = M)");
  CHECK(outcome(dw, {4, 4, 3, 3}, 0, 4) == "not_depthwise: group absent (1) with W ('w') of shape [4,4,3,3] is not "
                                          "depthwise (needs W [M, 1, ...] and group = M)");
}
