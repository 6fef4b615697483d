#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "patterns/pattern.h"
#include "test_models.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;

namespace {

const Pattern& Builtin(const std::string& name) {
  static const std::vector<Pattern> all = LoadPatternDir(BuiltinPatternDir());
  for (const auto& p : all)
    if (p.function.name() == name) return p;
  throw std::runtime_error("no built-in pattern " + name);
}

Pattern PatternFromText(const std::string& text) {
  auto patterns = ParsePatterns(text, "inline.onnxtxt");
  REQUIRE(patterns.size() == 1);
  return patterns[0];
}

MatchOutcome Match(const Graph& graph, const Pattern& pattern, const std::string& anchor,
                   std::vector<bool> claimed = {}) {
  claimed.resize(graph.num_nodes(), false);
  return MatchPattern(graph, pattern, test::NodeNamed(graph, anchor), claimed);
}

Strings NodeNames(const Graph& graph, const std::vector<NodeId>& ids) {
  Strings out;
  for (NodeId id : ids) out.push_back(graph.node(id).name);
  return out;
}

Strings ValueNames(const Graph& graph, const std::vector<ValueId>& ids) {
  Strings out;
  for (ValueId id : ids) out.push_back(id == kNoValue ? "-" : graph.value(id).name);
  return out;
}

// "reason at node: detail", or "match" / "no outcome".
std::string Outcome(const Graph& graph, const MatchOutcome& outcome) {
  if (outcome.match) return "match";
  if (!outcome.near_miss) return "no outcome";
  const auto& miss = *outcome.near_miss;
  return miss.reason + " at " + graph.node(miss.node).name + ": " + miss.detail;
}

// Conv (1x1, 2 -> 2 channels) + BN + Relu; CONV_BIAS, CONV_ATTRS, BN_ATTRS, EXTRA are filled in.
std::string ConvBnReluModel(const std::string& conv_inputs, const std::string& conv_attrs = "",
                            const std::string& bn = "n = BatchNormalization <epsilon = 0.001> (c, s, b, m, v)",
                            const std::string& extra = "", int opset = 13, const std::string& w = "w = {1.0, 0.5, -0.5, 1.0}") {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n"
         "g (float[1,2,4,4] x, float[2,2,1,1] " + w + ", float[2] cb = {0.1, -0.1},\n"
         "   float[2] s = {1.0, 2.0}, float[2] b = {0.0, 0.5}, float[2] m = {0.1, 0.2}, float[2] v = {1.0, 0.5})\n"
         "  => (float[1,2,4,4] y) {\n"
         "  c = Conv " + conv_attrs + " (" + conv_inputs + ")\n  " + bn + "\n  y = Relu (n)\n" + extra + "}\n";
}

const char* kHeader = "<domain: \"ai.onnxfuse\", opset_import: [\"\" : 13]>\n";

}  // namespace

TEST_CASE("ConvBnRelu matches with and without the conv bias", "[pattern_matcher]") {
  const Pattern& pattern = Builtin("ConvBnRelu");
  SECTION("with bias, captured attributes listed as the function declares them") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w, cb", "<strides = [1, 1], kernel_shape = [1, 1], pads = [0, 0, 0, 0]>"));
    auto outcome = Match(graph, pattern, "Relu_2");
    REQUIRE(outcome.match);
    CHECK_FALSE(outcome.near_miss);
    const auto& m = *outcome.match;
    CHECK(NodeNames(graph, m.nodes) == Strings{"Conv_0", "BatchNormalization_1", "Relu_2"});
    CHECK(ValueNames(graph, m.inputs) == Strings{"x", "w", "cb", "s", "b", "m", "v"});
    CHECK(ValueNames(graph, m.outputs) == Strings{"y"});
    Strings attrs;
    for (const auto& a : m.attributes) attrs.push_back(a.name());
    // auto_pad, dilations, group and momentum are absent on the nodes: not listed.
    CHECK(attrs == Strings{"kernel_shape", "pads", "strides", "epsilon"});
    CHECK(m.attributes[2].ints_size() == 2);
    CHECK(m.attributes[2].type() == onnx::AttributeProto::INTS);
    CHECK(m.attributes[3].f() == Approx(0.001));
  }
  SECTION("without bias: B binds to kNoValue (Conv's B is optional)") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w"));
    auto outcome = Match(graph, pattern, "Relu_2");
    REQUIRE(outcome.match);
    CHECK(ValueNames(graph, outcome.match->inputs) == Strings{"x", "w", "-", "s", "b", "m", "v"});
    Strings attrs;
    for (const auto& a : outcome.match->attributes) attrs.push_back(a.name());
    CHECK(attrs == Strings{"epsilon"});
  }
  SECTION("ConvBn anchors at the BatchNormalization; another anchor op gives no outcome") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w"));
    auto outcome = Match(graph, Builtin("ConvBn"), "BatchNormalization_1");
    REQUIRE(outcome.match);
    CHECK(NodeNames(graph, outcome.match->nodes) == Strings{"Conv_0", "BatchNormalization_1"});
    // n, the pattern's output, may be read outside (by the Relu).
    auto none = Match(graph, Builtin("ConvBn"), "Relu_2");
    CHECK_FALSE(none.match);
    CHECK_FALSE(none.near_miss);
  }
}

TEST_CASE("near-misses of ConvBnRelu carry their reason", "[pattern_matcher]") {
  const Pattern& pattern = Builtin("ConvBnRelu");
  SECTION("an intermediate read outside the match") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w", "", "n = BatchNormalization <epsilon = 0.001> (c, s, b, m, v)",
                                                     "  z = Neg (c)\n  y2 = Add (y, z)\n"));
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2")) ==
          "intermediate_used_outside at Conv_0: intermediate 'c' is used by node 'Neg_3' outside the match");
  }
  SECTION("W is not a constant") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w", "", "n = BatchNormalization <epsilon = 0.001> (c, s, b, m, v)",
                                                     "", 13, "w"));
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2")) ==
          "not_constant at Conv_0: W ('w') is not a constant: it is a graph input");
  }
  SECTION("training-mode BatchNormalization, opset 13: running statistics as extra outputs") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w", "", "n, rm, rv, sm, sv = BatchNormalization (c, s, b, m, v)"));
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2")) ==
          "output_mismatch at BatchNormalization_1: 'BatchNormalization_1' also writes 'rm' (output 1), which the "
          "pattern does not cover");
  }
  SECTION("training-mode BatchNormalization, opset 15: training_mode=1 with its running-stat outputs") {
    // ONNX requires the running mean and variance outputs in training mode, so
    // the extra outputs are what the matcher meets first.
    auto graph = test::GraphFromText(
        ConvBnReluModel("x, w", "", "n, rm, rv = BatchNormalization <training_mode = 1> (c, s, b, m, v)", "", 15));
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2")) ==
          "output_mismatch at BatchNormalization_1: 'BatchNormalization_1' also writes 'rm' (output 1), which the "
          "pattern does not cover");
    // training_mode=0 written out equals the schema default: it matches.
    auto explicit_zero = test::GraphFromText(
        ConvBnReluModel("x, w", "", "n = BatchNormalization <training_mode = 0> (c, s, b, m, v)", "", 15));
    CHECK(Outcome(explicit_zero, Match(explicit_zero, pattern, "Relu_2")) == "match");
  }
  SECTION("the producer has another op type") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w", "", "n = Sigmoid (c)"));
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2")) ==
          "op_mismatch at Sigmoid_1: 'Relu_2' reads 'n' from 'Sigmoid_1' (Sigmoid); the pattern expects "
          "BatchNormalization ('b')");
  }
  SECTION("claimed nodes are already fused") {
    auto graph = test::GraphFromText(ConvBnReluModel("x, w"));
    std::vector<bool> claimed(graph.num_nodes(), false);
    claimed[test::NodeNamed(graph, "Conv_0")] = true;
    CHECK(Outcome(graph, Match(graph, pattern, "Relu_2", claimed)) ==
          "already_fused at Conv_0: 'Conv_0' is already part of another fused group");
  }
}

TEST_CASE("attributes: literals, defaults and what a pattern does not cover", "[pattern_matcher]") {
  auto pattern = PatternFromText(std::string(kHeader) +
                                 "ConvRelu <strides> (X, W) => (Y) {\n"
                                 "  c = Conv <strides = @strides, group = 1, dilations = [1, 1]> (X, W)\n"
                                 "  Y = Relu (c)\n"
                                 "}\n");
  auto model = [](const std::string& attrs) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
           "g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}) => (float[1,2,4,4] y) {\n"
           "  c = Conv " + attrs + " (x, w)\n  y = Relu (c)\n}\n";
  };
  auto outcome = [&](const std::string& attrs) {
    auto graph = test::GraphFromText(model(attrs));
    return Outcome(graph, Match(graph, pattern, "Relu_1"));
  };
  CHECK(outcome("<dilations = [1, 1]>") == "match");  // group absent: its schema default 1 equals the literal
  CHECK(outcome("<group = 1, dilations = [1, 1], strides = [1, 1]>") == "match");
  CHECK(outcome("<dilations = [1, 1], auto_pad = \"NOTSET\">") == "match");  // an uncovered attribute at its default
  CHECK(outcome("<dilations = [1, 1], auto_pad = \"SAME_UPPER\">") ==
        "attribute_mismatch at Conv_0: 'Conv_0' has auto_pad='SAME_UPPER', which the pattern does not cover");
  CHECK(outcome("<dilations = [2, 2]>") ==
        "attribute_mismatch at Conv_0: 'Conv_0' has dilations=[2,2]; the pattern requires [1,1]");
  // Conv's dilations and pads have no schema default (absence means "1s", "0s" in prose only), so
  // the matcher cannot equate absent and written-out values: patterns capture such attributes.
  CHECK(outcome("") == "attribute_mismatch at Conv_0: 'Conv_0' has no dilations; the pattern requires [1,1]");
  CHECK(outcome("<dilations = [1, 1], pads = [0, 0, 0, 0]>") ==
        "attribute_mismatch at Conv_0: 'Conv_0' has pads=[0,0,0,0], which the pattern does not cover");

  auto one_group = PatternFromText(std::string(kHeader) +
                                   "Grouped (X, W) => (Y) {\n  c = Conv <group = 2> (X, W)\n  Y = Relu (c)\n}\n");
  auto graph = test::GraphFromText(model(""));
  CHECK(Outcome(graph, Match(graph, one_group, "Relu_1")) ==
        "attribute_mismatch at Conv_0: 'Conv_0' has no group (default 1); the pattern requires 2");
}

TEST_CASE("one function attribute captured twice must bind one value", "[pattern_matcher]") {
  auto pattern = PatternFromText(std::string(kHeader) +
                                 "LeakyTwice <alpha> (X) => (Y) {\n"
                                 "  a = LeakyRelu <alpha = @alpha> (X)\n  Y = LeakyRelu <alpha = @alpha> (a)\n}\n");
  auto outcome = [&](const std::string& first, const std::string& second) {
    auto graph = test::GraphFromText("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                                     "g (float[4] x) => (float[4] y) {\n  a = LeakyRelu " + first +
                                     " (x)\n  y = LeakyRelu " + second + " (a)\n}\n");
    auto result = Match(graph, pattern, "LeakyRelu_1");
    if (result.match) return std::to_string(result.match->attributes.size()) + " attribute(s)";
    return Outcome(graph, result);
  };
  CHECK(outcome("<alpha = 0.2>", "<alpha = 0.2>") == "1 attribute(s)");
  CHECK(outcome("", "") == "0 attribute(s)");
  CHECK(outcome("<alpha = 0.01>", "") == "1 attribute(s)");  // absent = the default 0.01
  CHECK(outcome("<alpha = 0.1>", "<alpha = 0.2>") ==
        "attribute_mismatch at LeakyRelu_0: @alpha would be 0.2 at 'LeakyRelu_1' but 0.1 at 'LeakyRelu_0'");
}

TEST_CASE("commutative inputs match in either order", "[pattern_matcher]") {
  auto model = [](const std::string& add) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
           "g (float[1,2,4,4] x, float[1,2,4,4] r, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}) => (float[1,2,4,4] y) {\n"
           "  c = Conv (x, w)\n  a = " + add + "\n  y = Relu (a)\n}\n";
  };
  SECTION("AddRelu binds A and B in the graph's order") {
    for (const char* add : {"Add (c, r)", "Add (r, c)"}) {
      auto graph = test::GraphFromText(model(add));
      auto outcome = Match(graph, Builtin("AddRelu"), "Relu_2");
      REQUIRE(outcome.match);
      CHECK(ValueNames(graph, outcome.match->inputs) ==
            (std::string(add) == "Add (c, r)" ? Strings{"c", "r"} : Strings{"r", "c"}));
    }
  }
  SECTION("Conv+Add+Relu finds the Conv operand on either side") {
    auto pattern = PatternFromText(std::string(kHeader) +
                                   "ConvAddRelu (X, W, R) => (Y) {\n"
                                   "  c = Conv (X, W)\n  s = Add (c, R)\n  Y = Relu (s)\n}\n");
    for (const char* add : {"Add (c, r)", "Add (r, c)"}) {
      auto graph = test::GraphFromText(model(add));
      auto outcome = Match(graph, pattern, "Relu_2");
      REQUIRE(outcome.match);
      CHECK(NodeNames(graph, outcome.match->nodes) == Strings{"Conv_0", "Add_1", "Relu_2"});
      CHECK(ValueNames(graph, outcome.match->inputs) == Strings{"x", "w", "r"});
    }
    auto neither = test::GraphFromText(model("Add (r, x)"));
    CHECK(Outcome(neither, Match(neither, pattern, "Relu_2")) ==
          "op_mismatch at Add_1: 'Add_1' reads 'r', a graph input; the pattern expects Conv ('c')");
  }
}

TEST_CASE("a wildcard used twice binds one value", "[pattern_matcher]") {
  auto silu = PatternFromText(std::string(kHeader) + "SiLU (X) => (Y) {\n  s = Sigmoid (X)\n  Y = Mul (X, s)\n}\n");
  auto model = [](const std::string& mul) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
           "g (float[1,4] x, float[1,4] z) => (float[1,4] y) {\n  s = Sigmoid (x)\n  y = " + mul + "\n}\n";
  };
  for (const char* mul : {"Mul (x, s)", "Mul (s, x)"}) {
    auto graph = test::GraphFromText(model(mul));
    auto outcome = Match(graph, silu, "Mul_1");
    REQUIRE(outcome.match);
    CHECK(ValueNames(graph, outcome.match->inputs) == Strings{"x"});
  }
  auto graph = test::GraphFromText(model("Mul (z, s)"));
  CHECK(Outcome(graph, Match(graph, silu, "Mul_1")) ==
        "binding_conflict at Sigmoid_0: 'Sigmoid_0' reads 'x' where the pattern's 'X' is already 'z'");
}

TEST_CASE("a body Constant matches an initializer or a Constant node by value", "[pattern_matcher]") {
  auto pattern = PatternFromText(std::string(kHeader) +
                                 "DivSqrt2Erf (X) => (Y) {\n"
                                 "  k = Constant <value = float {1.4142135}> ()\n"
                                 "  d = Div (X, k)\n"
                                 "  Y = Erf (d)\n"
                                 "}\n");
  auto model = [](const std::string& inputs, const std::string& constant) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
           "g (float[1,4] x" + inputs + ") => (float[1,4] y) {\n" + constant + "  d = Div (x, k)\n  y = Erf (d)\n}\n";
  };
  SECTION("an initializer") {
    auto graph = test::GraphFromText(model(", float[1] k = {1.41421}", ""));
    auto outcome = Match(graph, pattern, "Erf_1");
    REQUIRE(outcome.match);
    CHECK(NodeNames(graph, outcome.match->nodes) == Strings{"Div_0", "Erf_1"});
    CHECK(ValueNames(graph, outcome.match->inputs) == Strings{"x"});  // the constant is in the function
  }
  SECTION("a Constant node, which stays out of the match (it may be shared)") {
    auto graph = test::GraphFromText(model("", "  k = Constant <value = float {1.4142135}> ()\n"));
    auto outcome = Match(graph, pattern, "Erf_2");
    REQUIRE(outcome.match);
    CHECK(NodeNames(graph, outcome.match->nodes) == Strings{"Div_1", "Erf_2"});
  }
  SECTION("another value, or not a constant") {
    auto other = test::GraphFromText(model(", float k = {2.0}", ""));
    CHECK(Outcome(other, Match(other, pattern, "Erf_1")) ==
          "constant_mismatch at Div_0: 'Div_0' reads 'k' = 2 (FLOAT, rank 0); the pattern expects the constant "
          "1.41421 (FLOAT)");
    auto input = test::GraphFromText(model(", float[1] k", ""));
    CHECK(Outcome(input, Match(input, pattern, "Erf_1")) ==
          "constant_mismatch at Div_0: 'Div_0' reads 'k', not a one-number constant; the pattern expects the constant "
          "1.41421");
  }
}
