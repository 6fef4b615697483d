#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "write/onnx_writer.h"
#include "patterns/pattern.h"
#include "fuse/pattern_fuser.h"
#include "test_models.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;

namespace {

// Three patterns in one file, as a user would write them.
const char* kPatterns = R"(
#@ benefit: 30
#@ require: constant(W, scale, bias, mean, var)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
TestConvBnRelu <pads, strides, epsilon> (X, W, B, scale, bias, mean, var) => (Y) {
  c = Conv <pads: ints = @pads, strides: ints = @strides> (X, W, B)
  b = BatchNormalization <epsilon: float = @epsilon> (c, scale, bias, mean, var)
  Y = Relu (b)
}

#@ benefit: 20
#@ require: constant(W, scale, bias, mean, var)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
TestConvBn <pads, strides, epsilon> (X, W, B, scale, bias, mean, var) => (Y) {
  c = Conv <pads: ints = @pads, strides: ints = @strides> (X, W, B)
  Y = BatchNormalization <epsilon: float = @epsilon> (c, scale, bias, mean, var)
}

#@ benefit: 10
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
TestAddRelu (A, B) => (Y) {
  s = Add (A, B)
  Y = Relu (s)
}
)";

// A ResNet basic block: conv+bn+relu, conv(no bias)+bn, residual add, relu.
const char* kBlock = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  block (float[1,2,4,4] x) => (float[1,2,4,4] y) <
      float[2,2,3,3] w1 = {1,0,0,0,1,0,0,0,1, 0,1,0,1,0,1,0,1,0, 1,1,1,0,0,0,1,1,1, 0,0,1,0,1,0,1,0,0},
      float[2] b1 = {0.1, -0.2},
      float[2,2,3,3] w2 = {0,1,0,0,1,0,0,1,0, 1,0,1,0,0,0,1,0,1, 0,0,0,1,1,1,0,0,0, 1,0,0,0,0,0,0,0,1},
      float[2] s = {1.5, 0.5}, float[2] t = {0.1, 0.2}, float[2] m = {0.3, -0.1}, float[2] v = {2.0, 0.5}> {
    c1 = Conv <pads: ints = [1,1,1,1]> (x, w1, b1)
    n1 = BatchNormalization <epsilon: float = 0.001> (c1, s, t, m, v)
    r1 = Relu (n1)
    c2 = Conv <pads: ints = [1,1,1,1]> (r1, w2)
    n2 = BatchNormalization <epsilon: float = 0.001> (c2, s, t, m, v)
    a = Add (x, n2)
    y = Relu (a)
  })";

Strings Members(const Graph& graph, const FusedGroup& group) {
  Strings names;
  for (NodeId id : group.nodes) names.push_back(graph.node(id).name);
  return names;
}

const PatternOutcome& OutcomeOf(const FusionPlan& plan, const std::string& name) {
  auto it = std::find_if(plan.pattern_outcomes.begin(), plan.pattern_outcomes.end(),
                         [&](const PatternOutcome& o) { return o.pattern == name; });
  REQUIRE(it != plan.pattern_outcomes.end());
  return *it;
}

}  // namespace

TEST_CASE("patterns are tried by benefit, then body size, then name", "[pattern_fuser]") {
  auto patterns = ParsePatterns(kPatterns, "test.onnxtxt");
  Strings order;
  for (std::size_t i : PatternPriorityOrder(patterns)) order.push_back(patterns[i].function.name());
  CHECK(order == Strings{"TestConvBnRelu", "TestConvBn", "TestAddRelu"});
}

TEST_CASE("a residual block fuses into three pattern calls", "[pattern_fuser]") {
  Graph graph = test::GraphFromText(kBlock);
  FusionPlan plan = FuseByPatterns(graph, ParsePatterns(kPatterns, "test.onnxtxt"), {});
  REQUIRE(plan.groups.size() == 3);
  CHECK(Members(graph, plan.groups[0]) == Strings{"Conv_0", "BatchNormalization_1", "Relu_2"});
  CHECK(Members(graph, plan.groups[1]) == Strings{"Conv_3", "BatchNormalization_4"});
  CHECK(Members(graph, plan.groups[2]) == Strings{"Add_5", "Relu_6"});
  CHECK(plan.groups[0].rule == "pattern:TestConvBnRelu");
  REQUIRE(plan.groups[1].call);
  // Conv_3 has no bias: the optional input is passed as omitted.
  CHECK(plan.groups[1].call->inputs[2] == kNoValue);
  CHECK(OutcomeOf(plan, "TestConvBnRelu").groups == std::vector<int>{0});
  CHECK(OutcomeOf(plan, "TestConvBn").groups == std::vector<int>{1});
  CHECK(OutcomeOf(plan, "TestAddRelu").groups == std::vector<int>{2});

  FusedModel fused = BuildFusedModel(graph, plan);
  CheckFusedModel(fused.model);
  const auto& nodes = fused.model.graph().node();
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].op_type() == "TestConvBnRelu");
  // Conv_3 has no bias: it calls the variant of the pattern without B.
  CHECK(nodes[1].op_type() == "TestConvBn_no_B");
  CHECK(nodes[1].input_size() == 6);
  CHECK(nodes[2].op_type() == "TestAddRelu");
  for (const auto& node : nodes) CHECK(node.domain() == "ai.onnxfuse");
  // Each pattern's own function is written once, at the model's opset.
  REQUIRE(fused.model.functions_size() == 3);
  for (const auto& f : fused.model.functions()) {
    CHECK(f.opset_import(0).version() == 13);
  }
  CHECK(fused.function_of_group == Strings{"TestConvBnRelu", "TestConvBn_no_B", "TestAddRelu"});
}

TEST_CASE("near-misses are reported and the rest goes to the post-dominator fuser", "[pattern_fuser]") {
  // c1 is also read by Sigmoid_3: ConvBnRelu must not swallow it.
  Graph graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,4,4] y, float[1,2,4,4] z) <
        float[2,2,1,1] w = {1, 0, 0, 1}, float[2] s = {1.5, 0.5}, float[2] t = {0.1, 0.2},
        float[2] m = {0.3, -0.1}, float[2] v = {2.0, 0.5}> {
      c1 = Conv (x, w)
      n1 = BatchNormalization (c1, s, t, m, v)
      y = Relu (n1)
      z = Sigmoid (c1)
    })");
  FusionPlan plan = FuseByPatterns(graph, ParsePatterns(kPatterns, "test.onnxtxt"), {});
  const auto& misses = OutcomeOf(plan, "TestConvBnRelu").near_misses;
  REQUIRE(misses.size() == 1);
  CHECK(graph.node(misses[0].node).name == "Relu_2");
  CHECK(misses[0].reason == "intermediate_used_outside");
  CHECK_THAT(misses[0].detail, Catch::Contains("Sigmoid_3"));
  // No pattern matched; TVM's rules fuse BN+Relu (elementwise into elementwise).
  CHECK(plan.pattern_outcomes.size() == 3);
  for (const auto& outcome : plan.pattern_outcomes) CHECK(outcome.groups.empty());
  bool bn_relu = std::any_of(plan.groups.begin(), plan.groups.end(), [&](const FusedGroup& g) {
    return Members(graph, g) == Strings{"BatchNormalization_1", "Relu_2"};
  });
  CHECK(bn_relu);
  FusedModel fused = BuildFusedModel(graph, plan);
  CheckFusedModel(fused.model);
}
