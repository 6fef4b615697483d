// subgraph_check (src/rewrite/subgraph_check.cc): an If/Loop/Scan body that
// onnx's inference of the whole model lets through but that is invalid on its
// own, and what the control-flow pass reports for it (difftest seed 24724).
#include <catch2/catch.hpp>

#include <string>

#include "onnxfuse/error.h"
#include "rewrite/inline_control_flow.h"
#include "rewrite/subgraph_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// A Scan over axis 1 of x [1, 1] whose body reads the initializers depth and
// values from the outer scope; `index_rank1` keeps ArgMin's axis (an index of
// rank 1, valid), else OneHot gets a scalar index, which its schema refuses.
std::string ScanModel(bool index_rank1) {
  return std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1] x, int32 depth = {1}, float[2] values = {-0.5, 1.0}, float[1] s0 = {0.0})
      => (float[1,1] ys) {
      last, ys = Scan <body = b (float[1] s, float[1] xt) => (float[1] s2, float[1] y) {
        i = ArgMin <axis = 0, keepdims = )") + (index_rank1 ? "1" : "0") + R"(> (xt)
        h = OneHot <axis = 0> (i, depth, values)
        )" + (index_rank1 ? "hs = Reshape (h, shape1)\n" : "hs = Identity (h)\n") + R"(
        s2 = Add (s, hs)
        y = Identity (s2)
      }, num_scan_inputs = 1, scan_input_axes = [1], scan_output_axes = [1]> (s0, x)
      shape1 = Constant <value = int64[1] {1}> ()
    })";
}

const Node& ScanNode(const Graph& graph) {
  for (const Node& node : graph.nodes())
    if (node.op_type == "Scan") return node;
  FAIL("no Scan node");
  return graph.node(0);
}

}  // namespace

TEST_CASE("InvalidBodyReason names the body whose OneHot reads a scalar index", "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(ScanModel(false));   // the model loads: onnx does not look into the body
  const std::string reason = InvalidBodyReason(graph.model(), ScanNode(graph).proto);
  CHECK(reason.find("its body fails shape inference") == 0);
  CHECK(reason.find("OneHot") != std::string::npos);
}

TEST_CASE("InvalidBodyReason passes a valid body that reads outer initializers", "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(ScanModel(true));
  CHECK(InvalidBodyReason(graph.model(), ScanNode(graph).proto).empty());
  REQUIRE_NOTHROW(InlineControlFlow(graph));
}

TEST_CASE("InlineControlFlow reports an invalid body as an invalid model naming the node, not an internal error",
          "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(ScanModel(false));
  try {
    InlineControlFlow(graph);
    FAIL("the invalid body was expanded");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    const std::string what = e.what();
    CHECK(what.find("(Scan)") != std::string::npos);
    CHECK(what.find("OneHot") != std::string::npos);
  }
}
