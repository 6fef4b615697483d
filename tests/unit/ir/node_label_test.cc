#include <catch2/catch.hpp>

#include "ir/node_label.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("nodes are named one way in messages, unnamed ones by index", "[node_label]") {
  auto graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      r = Relu (x)
      y = Neg (r)
    })");
  auto model = graph.model();
  model.mutable_graph()->mutable_node(1)->set_name("negate");
  CHECK(NodeName(graph.model().graph().node(0), 0) == "Relu_0");
  CHECK(NodeName(model.graph().node(1), 1) == "negate");
  CHECK(NodeName(graph.model().graph().node(0), -1).empty());  // index unknown: the name as written
  CHECK(QuotedNode(graph.node(0)) == "'Relu_0' (Relu)");
  CHECK(NodeLabel(graph.node(1)) == "node 'Neg_1' (Neg)");
  CHECK(NodeLabel(model.graph().node(1), 1) == "node 'negate' (Neg)");
  CHECK(graph.node(0).name == NodeName(graph.model().graph().node(0), 0));  // the Graph names nodes so too
}
