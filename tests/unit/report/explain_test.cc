// `--explain NODE` (report/explain.h): where a node ended and why, as text.
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"
#include "report/explain.h"
#include "reported_block.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

struct Explained : test::ReportedBlock {
  std::string Explain(const std::string& node) const { return ExplainNode(graph, kinds, plan, functions, node); }
};

}  // namespace

TEST_CASE("a fused node names its group, function, rule and the other members", "[explain]") {
  Explained e;
  REQUIRE(e.plan.group_of[test::NodeNamed(e.graph, "Conv_1")] == 1);
  CHECK(e.Explain("BatchNormalization_2") ==
        "BatchNormalization_2 (BatchNormalization, kElemWise)\n"
        "  fused in group 1 as Conv_BatchNormalization_Relu by test, with:\n"
        "    Conv_1 (Conv, kOutEWiseFusable)\n"
        "    Relu_3 (Relu, kElemWise)\n");
  // The target of a rejection hears of the node that did not come.
  CHECK_THAT(e.Explain("Conv_1"), Catch::EndsWith("  Relu_0 did not fuse into it (fork): r0 is read twice\n"));
  // Without function names the group is still described.
  CHECK_THAT(ExplainNode(e.graph, e.kinds, e.plan, {}, "Relu_3"), Catch::Contains("  fused in group 1 by test, with:\n"));
}

TEST_CASE("a node alone says so, with its rejections and near-misses", "[explain]") {
  Explained e;
  CHECK(e.Explain("Relu_0") ==
        "Relu_0 (Relu, kElemWise)\n"
        "  stays alone (group 0)\n"
        "  not fused further (fork): r0 is read twice\n");
  const std::string miss = "  pattern ConvBnAddRelu anchored at Relu_7 did not match (intermediate_used_outside): "
                           "r0 leaves\n";
  CHECK(e.Explain("Relu_7") == "Relu_7 (Relu, kElemWise)\n  stays alone (group 5)\n" + miss);
  CHECK_THAT(e.Explain("Add_6"), Catch::EndsWith(miss));  // where matching failed
}

TEST_CASE("nodes the opset conversion rewrote are explained by their conversion", "[explain]") {
  Explained e;
  e.graph.set_conversion(OpsetConversion{20, 9, 17, 8,
                                         {{"gelu", "Gelu", "Gelu-20: erf form in Div, Erf, Add, Mul"},
                                          {"Relu_7", "Relu", "none"}}});
  CHECK(e.Explain("gelu") ==
        "node 'gelu' (Gelu, opset 20) converted to opset 17: Gelu-20: erf form in Div, Erf, Add, Mul\n");
  CHECK_THAT(e.Explain("Relu_7"), Catch::StartsWith("node 'Relu_7' (Relu, opset 20) converted to opset 17: none\n"
                                                    "Relu_7 (Relu, kElemWise)\n"));
}

TEST_CASE("an unknown node is a usage error", "[explain]") {
  Explained e;
  auto error = test::ErrorOf([&] { e.Explain("nope"); });
  CHECK(error.kind == ErrorKind::kUsage);
  CHECK(error.message == "--explain: the model has no node named 'nope'");
}
