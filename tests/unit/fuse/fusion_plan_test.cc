// The fusion plan (fuse/fusion_plan.h): groups from labels, the plan's
// invariants, and each group's inputs and outputs.
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"
#include "fuse/fusion_plan.h"
#include "test_models.h"

using namespace onnxfuse;
using Names = std::vector<std::string>;

namespace {

// Conv -> Relu -> Add(., x) -> Sigmoid, with the Relu also a graph output.
const char* kChain = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,4,4] x, float[2,2,1,1] w) => (float[1,2,4,4] r, float[1,2,4,4] y) {
    c = Conv (x, w)
    r = Relu (c)
    a = Add (r, x)
    y = Sigmoid (a)
  })";

Names ValueNames(const Graph& graph, const std::vector<ValueId>& values) {
  Names names;
  for (ValueId v : values) names.push_back(graph.value(v).name);
  return names;
}

}  // namespace

TEST_CASE("MakeFusionPlan: groups by first member, combined kind, anchor, rules", "[fusion_plan]") {
  Graph graph = test::GraphFromText(kChain);
  auto kinds = ClassifyAll(graph);
  CHECK(kinds == std::vector<OpPatternKind>{OpPatternKind::kOutEWiseFusable, OpPatternKind::kElemWise,
                                            OpPatternKind::kBroadcast, OpPatternKind::kElemWise});
  // Labels are arbitrary ints: 7 holds Conv+Relu+Add, 3 the Sigmoid.
  auto plan = MakeFusionPlan(graph, kinds, {7, 7, 7, 3}, {"", "", "", "alone", "", "", "", "postdom.phase0"}, "unit");
  CHECK(plan.strategy == "unit");
  REQUIRE(plan.groups.size() == 2);
  const auto& first = plan.groups[0];
  CHECK(first.id == 0);
  CHECK(first.nodes == std::vector<NodeId>{0, 1, 2});
  CHECK(first.pattern == OpPatternKind::kOutEWiseFusable);
  CHECK(first.anchor == 0);
  CHECK(first.rule == "postdom.phase0");
  CHECK_FALSE(first.call);
  const auto& second = plan.groups[1];
  CHECK(second.nodes == std::vector<NodeId>{3});
  CHECK(second.rule.empty());  // a single node has no rule
  CHECK(second.anchor == kNoNode);
  CHECK(plan.group_of == std::vector<int>{0, 0, 0, 1});

  auto e = test::ErrorOf([&] { MakeFusionPlan(graph, kinds, {0, 0}, {}, "unit"); });
  CHECK(e.kind == ErrorKind::kInternal);
  CHECK(e.message == "internal error: one group label per node");
}

TEST_CASE("a group's inputs in first-use order and outputs that escape it", "[fusion_plan]") {
  Graph graph = test::GraphFromText(kChain);
  auto plan = test::PlanGrouping(graph, {{"Conv_0", "Relu_1", "Add_2"}});
  const auto& group = plan.groups[0];
  CHECK(ValueNames(graph, GroupInputs(graph, group)) == Names{"x", "w"});  // x read twice, listed once
  // r is a graph output, a leaves for the Sigmoid; c stays inside.
  CHECK(ValueNames(graph, GroupOutputs(graph, plan, group)) == Names{"r", "a"});
  const auto& sigmoid = plan.groups[1];
  CHECK(ValueNames(graph, GroupInputs(graph, sigmoid)) == Names{"a"});
  CHECK(ValueNames(graph, GroupOutputs(graph, plan, sigmoid)) == Names{"y"});
}

TEST_CASE("ValidateFusionPlan accepts a partition of convex groups only", "[fusion_plan]") {
  Graph graph = test::GraphFromText(kChain);
  CHECK_NOTHROW(ValidateFusionPlan(graph, test::PlanGrouping(graph, {{"Conv_0", "Relu_1", "Add_2", "Sigmoid_3"}})));

  // Conv and Add without the Relu between them: a path leaves the group and comes back.
  auto holed = test::PlanGrouping(graph, {{"Conv_0", "Add_2"}});
  auto e = test::ErrorOf([&] { ValidateFusionPlan(graph, holed); });
  CHECK(e.kind == ErrorKind::kInternal);
  CHECK_THAT(e.message, Catch::Contains("(first node 'Conv_0') is not convex: a path leaves it and comes back"));

  auto twice = test::PlanGrouping(graph, {});
  twice.groups[1].nodes.push_back(0);  // Conv_0 in its own group and in Relu's
  e = test::ErrorOf([&] { ValidateFusionPlan(graph, twice); });
  CHECK(e.message == "internal error: group membership agrees with group_of");

  auto short_plan = test::PlanGrouping(graph, {});
  short_plan.group_of.pop_back();
  CHECK(test::ErrorOf([&] { ValidateFusionPlan(graph, short_plan); }).message ==
        "internal error: plan covers every node");

  auto lost = test::PlanGrouping(graph, {});
  lost.groups[3].nodes.clear();  // Sigmoid_3 in no group
  CHECK(test::ErrorOf([&] { ValidateFusionPlan(graph, lost); }).message ==
        "internal error: node 'Sigmoid_3' (Sigmoid) is in exactly one group");
}
