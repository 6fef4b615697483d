// The JSON fusion report (report/report.h): model summary, groups with the
// intermediates they eliminate, not-fused entries, totals, stage times and
// the opset conversion, as docs/cli.md "Fusion report" documents them.
#include <catch2/catch.hpp>

#include "report/report.h"
#include "reported_block.h"
#include "test_models.h"

using namespace onnxfuse;
using nlohmann::json;

namespace {

struct BasicBlockReport : test::ReportedBlock {
  json Build(const StageTimes& times = {}) const { return BuildReport(graph, kinds, plan, functions, times); }
};

}  // namespace

TEST_CASE("the model summary counts ops, kinds and initializers", "[report]") {
  BasicBlockReport r;
  const json model = r.Build()["model"];
  CHECK(model["path"] == "inline.onnx");
  CHECK(model["ir_version"] == 8);
  CHECK(model["opset"] == 13);
  CHECK(model["node_count"] == 8);
  CHECK(model["initializers"] == 6);
  CHECK(model["inputs"] == json::parse(R"([{"name": "x", "shape": "[1,2,8,8]"}])"));
  CHECK(model["outputs"] == json::parse(R"([{"name": "y", "shape": "[1,2,8,8]"}])"));
  CHECK(model["op_histogram"] == json::parse(R"({"Add": 1, "BatchNormalization": 2, "Conv": 2, "Relu": 3})"));
  CHECK(model["kind_histogram"] == json::parse(R"({"kBroadcast": 1, "kElemWise": 5, "kOutEWiseFusable": 2})"));
}

TEST_CASE("a fused group lists its members and the intermediates it keeps out of memory", "[report]") {
  BasicBlockReport r;
  const json report = r.Build();
  REQUIRE(report["groups"].size() == 1);
  const json& g = report["groups"][0];
  CHECK(g["id"] == r.fused);
  CHECK(g["function"] == "Conv_BatchNormalization_Relu");
  CHECK(g["nodes"] == json::parse(R"(["Conv_1", "BatchNormalization_2", "Relu_3"])"));
  CHECK(g["pattern_kinds"] == json::parse(R"(["kOutEWiseFusable", "kElemWise", "kElemWise"])"));
  CHECK(g["pattern_kind"] == "kOutEWiseFusable");
  CHECK(g["anchor"] == "Conv_1");
  CHECK(g["rule"] == "test");
  CHECK(g["inputs"] == json::parse(R"(["r0", "w1", "s", "b", "m", "v"])"));
  CHECK(g["outputs"] == json::parse(R"(["r1"])"));
  // c1 and n1: two float tensors of 1x2x8x8.
  CHECK(g["intermediate_tensors_eliminated"] == 2);
  CHECK(g["intermediate_bytes_eliminated"] == 2 * 2 * 8 * 8 * 4);
}

TEST_CASE("rejections, then singletons nobody explained, are not_fused entries", "[report]") {
  BasicBlockReport r;
  const json not_fused = r.Build()["not_fused"];
  REQUIRE(not_fused.size() == 5);  // Relu_0's rejection; Conv_4, BatchNormalization_5, Add_6, Relu_7 alone
  CHECK(not_fused[0] == json{{"node", "Relu_0"}, {"op_type", "Relu"}, {"pattern_kind", "kElemWise"}, {"group", 0},
                             {"target", "Conv_1"}, {"reason", "fork"}, {"detail", "r0 is read twice"}});
  CHECK(not_fused[1]["node"] == "Conv_4");
  CHECK(not_fused[1]["reason"] == "no_candidate");
  CHECK(not_fused[1]["target"].is_null());
  CHECK(not_fused[1]["detail"] == "no fusion rule of strategy 'test' applies to Conv_4");
}

TEST_CASE("totals, pattern outcomes, stage times and the conversion section", "[report]") {
  BasicBlockReport r;
  StageTimes times;
  times.load_ms = 1, times.classify_ms = 2, times.fuse_ms = 3, times.build_ms = 4, times.check_ms = 5,
  times.save_ms = 6;
  const json report = r.Build(times);
  CHECK(report["schema_version"] == kReportSchemaVersion);
  CHECK(report["tool"]["name"] == "onnx-fuse");
  CHECK(report["strategy"] == "test");
  CHECK(report["totals"] == json{{"nodes_before", 8},
                                 {"constant_nodes", 0},
                                 {"kernels_after", 6},
                                 {"fused_groups", 1},
                                 {"nodes_in_fused_groups", 3},
                                 {"intermediate_tensors_eliminated", 2},
                                 {"intermediate_bytes_eliminated", 1024},
                                 {"intermediate_tensors_of_unknown_size", 0},
                                 {"not_fused_entries", 5}});
  CHECK(report["patterns"] == json::parse(R"([{"pattern": "ConvBnAddRelu", "file": "conv.onnxtxt", "benefit": 40,
    "matches": 0, "groups": [], "near_misses": [{"anchor": "Relu_7", "node": "Add_6",
    "reason": "intermediate_used_outside", "detail": "r0 leaves"}]}])"));
  CHECK(report["timings_ms"]["write"] == 15.0);  // build + check + save
  CHECK(report["timings_ms"]["total"] == 21.0);
  CHECK(report["conversion"] == json::parse(R"({"from": {"opset": 13, "ir_version": 8},
    "to": {"opset": 13, "ir_version": 8}, "converted": false, "nodes": []})"));

  OpsetConversion conversion{20, 9, 17, 8, {{"Gelu_3", "Gelu", "Gelu-20: erf form in Div, Erf, Add, Mul"}}};
  r.graph.set_conversion(conversion);
  const json converted = r.Build()["conversion"];
  CHECK(converted["converted"] == true);
  CHECK(converted["from"]["opset"] == 20);
  CHECK(converted["nodes"][0] == json{{"node", "Gelu_3"}, {"op_type", "Gelu"},
                                      {"adapter", "Gelu-20: erf form in Div, Erf, Add, Mul"}});
}

TEST_CASE("Constant-only groups launch no kernel: symbolic intermediates are counted apart", "[report]") {
  Graph graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4] x) => (float[N,4] y) {
      k = Constant <value = float {2.0}> ()
      a = Mul (x, k)
      y = Relu (a)
    })");
  auto plan = test::PlanGrouping(graph, {{"Mul_1", "Relu_2"}});
  const json report = BuildReport(graph, ClassifyAll(graph), plan, {}, {});
  CHECK(report["totals"]["constant_nodes"] == 1);
  CHECK(report["totals"]["kernels_after"] == 1);
  CHECK(report["totals"]["intermediate_tensors_eliminated"] == 1);
  CHECK(report["totals"]["intermediate_bytes_eliminated"] == 0);
  CHECK(report["totals"]["intermediate_tensors_of_unknown_size"] == 1);
  CHECK(report["groups"][0]["function"] == "");  // no function names given
}

TEST_CASE("pattern regions name their pattern, nodes and the groups holding them", "[report]") {
  BasicBlockReport r;
  CHECK(r.Build()["pattern_regions"] == json::array());
  // A region across the fused group and the singleton after it (any names do
  // for the report; the fuser records only library patterns).
  const NodeId conv = test::NodeNamed(r.graph, "Conv_1"), relu = test::NodeNamed(r.graph, "Relu_3"),
               next = test::NodeNamed(r.graph, "Conv_4");
  r.plan.groups[static_cast<std::size_t>(r.fused)].regions.push_back({"Test", {conv, relu, next}});
  const json regions = r.Build()["pattern_regions"];
  REQUIRE(regions.size() == 1);
  CHECK(regions[0]["pattern"] == "Test");
  CHECK(regions[0]["nodes"] == json::parse(R"(["Conv_1", "Relu_3", "Conv_4"])"));
  CHECK(regions[0]["groups"] == json::array({r.fused, r.plan.group_of[next]}));
}
