// The fixture of the report's tests (report/report.h, report/explain.h): the
// seed's basic block with a hand-made fusion plan that has one of each thing
// a report describes. Header-only: the test binary globs *_test.cc.
#pragma once

#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "test_models.h"

namespace onnxfuse::test {

/// test::kBasicBlock (8 nodes) with Conv_1, BatchNormalization_2 and Relu_3
/// fused as the function Conv_BatchNormalization_Relu (group `fused`), every
/// other node alone (rule "test"); Relu_0 rejected by a fork into Conv_1; the
/// pattern ConvBnAddRelu (conv.onnxtxt, benefit 40) anchored at Relu_7 missed
/// at Add_6 (intermediate_used_outside).
struct ReportedBlock {
  Graph graph = GraphFromText(kBasicBlock);
  std::vector<OpPatternKind> kinds = ClassifyAll(graph);
  FusionPlan plan = PlanGrouping(graph, {{"Conv_1", "BatchNormalization_2", "Relu_3"}});
  std::vector<std::string> functions = std::vector<std::string>(plan.groups.size());
  int fused = plan.group_of[NodeNamed(graph, "Conv_1")];

  ReportedBlock() {
    functions[static_cast<std::size_t>(fused)] = "Conv_BatchNormalization_Relu";
    plan.rejections.push_back({NodeNamed(graph, "Relu_0"), NodeNamed(graph, "Conv_1"), "fork", "r0 is read twice"});
    PatternOutcome outcome;
    outcome.pattern = "ConvBnAddRelu";
    outcome.file = "conv.onnxtxt";
    outcome.benefit = 40;
    outcome.near_misses.push_back(
        {NodeNamed(graph, "Relu_7"), NodeNamed(graph, "Add_6"), "intermediate_used_outside", "r0 leaves"});
    plan.pattern_outcomes.push_back(outcome);
  }
};

}  // namespace onnxfuse::test
