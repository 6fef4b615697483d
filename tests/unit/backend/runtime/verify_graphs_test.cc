// The graphs the output check compiles besides the model
// (src/backend/runtime/verify_graphs.h): values kept as outputs, and the
// model cut at its quantized activations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/runtime/verify_graphs.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x -> Q -> DQ -> Relu -> Q -> DQ -> y, and a third pair whose
// DequantizeLinear has a scale of its own (not an activation to compare).
const char* const kTwoActivations = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,4,3,3] x) => (float[1,4,3,3] y, float[1,4,3,3] z) {
    s = Constant <value = float {0.05}> ()
    t = Constant <value = float {0.1}> ()
    zp = Constant <value = uint8 {10}> ()
    xq = QuantizeLinear (x, s, zp)
    xd = DequantizeLinear (xq, s, zp)
    r = Relu (xd)
    rq = QuantizeLinear (r, s, zp)
    y = DequantizeLinear (rq, s, zp)
    oq = QuantizeLinear (r, s, zp)
    z = DequantizeLinear (oq, t, zp)
  })";

}  // namespace

TEST_CASE("WithOutputs keeps the nodes and adds the values as typed outputs", "[verify]") {
  Graph graph = test::GraphFromText(kTwoActivations);
  Graph kept = WithOutputs(graph, {*graph.FindValue("r"), *graph.FindValue("y")});
  CHECK(kept.num_nodes() == graph.num_nodes());
  REQUIRE(kept.outputs().size() == 3);  // y is one already
  const Value& r = kept.value(kept.outputs()[2]);
  CHECK(r.name == "r");
  CHECK(r.type.dims == std::vector<std::int64_t>{1, 4, 3, 3});
}

TEST_CASE("quantized activations are those dequantized with their own scale and zero point", "[verify][quantize]") {
  Graph graph = test::GraphFromText(kTwoActivations);
  const auto activations = QuantizedActivations(graph);
  REQUIRE(activations.size() == 2);
  CHECK(graph.value(graph.node(activations[0].quantize).outputs[0]).name == "xq");
  CHECK(graph.value(activations[0].dequantized).name == "xd");
  CHECK(graph.value(graph.node(activations[1].quantize).outputs[0]).name == "rq");
  CHECK(activations[1].scale == std::vector<float>{0.05f});
}

TEST_CASE("a graph cut at its quantized activations reads each from a reference input", "[verify][quantize]") {
  Graph graph = test::GraphFromText(kTwoActivations);
  const FusionPlan plan = test::FusePostdom(graph);
  const auto activations = QuantizedActivations(graph);
  const CutGraph cut = CutAtQuantizedActivations(graph, plan, activations);
  const Graph& g = cut.graph;
  REQUIRE(cut.reference_inputs == std::vector<std::string>{"xd_reference", "y_reference"});
  REQUIRE(cut.checked_outputs == std::vector<std::string>{"xd_checked", "y_checked"});
  CHECK(g.num_nodes() == graph.num_nodes() + 4);
  // A copy of each QuantizeLinear just before it, from the reference input to the activation.
  const char* const activation_names[] = {"xq", "rq"};
  for (std::size_t i = 0; i < activations.size(); ++i) {
    const NodeId copy = g.value(*g.FindValue(activation_names[i])).producer;
    const std::string& original = graph.node(activations[i].quantize).name;
    CHECK(g.node(copy).name == original + "_reference");
    CHECK(g.node(copy + 1).name == original);
    CHECK(g.value(g.node(copy).inputs[0]).name == cut.reference_inputs[i]);
    CHECK(g.value(g.node(copy).inputs[0]).is_graph_input);
  }
  // The model's own QuantizeLinear nodes now feed only the new DequantizeLinear nodes, last.
  const Value& computed = g.value(*g.FindValue("rq_computed"));
  REQUIRE(computed.consumers.size() == 1);
  const Node& check = g.node(computed.consumers[0]);
  CHECK(check.op_type == "DequantizeLinear");
  CHECK(computed.consumers[0] == g.num_nodes() - 1);
  CHECK(g.value(check.outputs[0]).name == "y_checked");
  CHECK(g.value(check.outputs[0]).is_graph_output);
  // The model's groups on the same nodes (by name); each new node alone.
  REQUIRE(cut.plan.groups.size() == plan.groups.size() + 4);
  for (const FusedGroup& group : plan.groups) {
    std::vector<std::string> names, moved_names;
    for (NodeId id : group.nodes) names.push_back(graph.node(id).name);
    const NodeId first = static_cast<NodeId>(std::find_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) {
                                               return n.name == names[0];
                                             }) - g.nodes().begin());
    const FusedGroup& moved = cut.plan.groups.at(static_cast<std::size_t>(cut.plan.group_of.at(first)));
    for (NodeId id : moved.nodes) moved_names.push_back(g.node(id).name);
    CHECK(moved_names == names);
  }
}
