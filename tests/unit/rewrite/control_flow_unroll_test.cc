// The expansions of src/rewrite/control_flow_unroll.cc on their own: the
// nodes and constants each puts in the enclosing graph, per opset.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ir/tensor_values.h"
#include "rewrite/control_flow_unroll.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// A Loop body whose iteration number is declared int64[1], as some exporters write it.
const onnx::ModelProto& LoopModel() {
  static const onnx::ModelProto model = test::ParseModel(R"(<ir_version: 7, opset_import: ["" : 11]>
    g (float[2] x) => (float[2] y, float[1,2] s) {
      m = Constant <value = int64 {1}> ()
      y, s = Loop (m, , x) <body = body_g (int64[1] i, bool ci, float[2] v) => (bool co, float[2] vo, float[2] so) {
        co = Identity (ci)
        f = Cast <to = 1> (i)
        vo = Add (v, f)
        so = Identity (vo)
      }>
    })");
  return model;
}

// The body of an opset-8 Scan over x [2,3,4] from state a [2,4] (the text
// syntax cannot write its omitted first input; the body is what is used).
const onnx::ModelProto& ScanModel() {
  static const onnx::ModelProto model = test::ParseModel(R"(<ir_version: 7, opset_import: ["" : 9]>
    g (float[3,4] x, float[4] a) => (float[4] total, float[3,4] seen) {
      total, seen = Scan (a, x) <num_scan_inputs = 1,
                                   body = body_g (float[4] acc, float[4] row) => (float[4] acc_out, float[4] so) {
        acc_out = Add (acc, row)
        so = Identity (acc_out)
      }>
    })");
  return model;
}

std::vector<std::string> OpTypes(const Expansion& e) {
  std::vector<std::string> ops;
  for (const auto& n : e.nodes) ops.push_back(n.op_type());
  return ops;
}

const onnx::TensorProto& Initializer(const Expansion& e, const std::string& name) {
  auto it = std::find_if(e.initializers.begin(), e.initializers.end(), [&](const auto& t) { return t.name() == name; });
  REQUIRE(it != e.initializers.end());
  return *it;
}

}  // namespace

TEST_CASE("UnrollLoop: one iteration, opset 11, a [1] iteration number", "[rewrite][control_flow_unroll]") {
  NameSource names(LoopModel());
  ExpansionSite site{11, names, "L/", "node 'L' (Loop)"};
  Expansion e = UnrollLoop(LoopModel().graph().node(1).attribute(0).g(), 1, {"x"}, site);
  // One copy of the body, then the scan output's Unsqueeze alone (no Concat of one item).
  CHECK(OpTypes(e) == std::vector<std::string>{"Identity", "Cast", "Add", "Identity", "Unsqueeze"});
  const onnx::NodeProto& unsqueeze = e.nodes.back();
  REQUIRE(unsqueeze.attribute_size() == 1);  // opset 11: axes is an attribute
  CHECK(unsqueeze.attribute(0).name() == "axes");
  CHECK(unsqueeze.attribute(0).ints(0) == 0);
  CHECK(unsqueeze.input_size() == 1);
  const onnx::TensorProto& iter = Initializer(e, "L/iter0");
  CHECK(iter.dims_size() == 1);  // declared int64[1]
  CHECK(DecodeTensor<std::int64_t>(iter, "iter") == std::vector<std::int64_t>{0});
  CHECK(Initializer(e, "L/cond").data_type() == onnx::TensorProto::BOOL);
  CHECK(e.nodes[1].input(0) == "L/iter0");
  CHECK(e.nodes[2].input(0) == "x");
  CHECK(e.outputs == std::vector<std::string>{"L/i0/vo", unsqueeze.output(0)});
}

TEST_CASE("UnrollBatchedScan: an opset-8 Scan item by item, reversed", "[rewrite][control_flow_unroll]") {
  NameSource names(ScanModel());
  ExpansionSite site{8, names, "S/", "node 'S' (Scan)"};
  ScanShape shape;
  shape.states = {"a"};
  shape.scan_inputs = {"x"};
  shape.input_axes = {0};
  shape.input_reverse = {1};
  shape.output_axes = {0};
  shape.output_reverse = {0};
  shape.length = 3;
  const auto& attributes = ScanModel().graph().node(0).attribute();
  auto body = std::find_if(attributes.begin(), attributes.end(), [](const auto& a) { return a.name() == "body"; });
  REQUIRE(body != attributes.end());
  Expansion e = UnrollBatchedScan(body->g(), shape, 2, site);
  // Per item: its state and input (Gather axis 0), three steps reading rows 2, 1, 0, the
  // steps' outputs stacked; then the items stacked along the batch axis.
  std::vector<std::int64_t> rows;
  int adds = 0, concats = 0;
  for (const auto& n : e.nodes) {
    adds += n.op_type() == "Add";
    concats += n.op_type() == "Concat";
    if (n.op_type() == "Gather" && n.input(0).find("x_b") != std::string::npos)
      rows.push_back(DecodeTensor<std::int64_t>(Initializer(e, n.input(1)), "index")[0]);
  }
  CHECK(adds == 6);
  CHECK(concats == 2 + 2);  // one per item, then total and seen over the items
  CHECK(rows == std::vector<std::int64_t>{2, 1, 0, 2, 1, 0});
  REQUIRE(e.outputs.size() == 2);
  for (const auto& out : e.outputs) {
    auto producer = std::find_if(e.nodes.begin(), e.nodes.end(), [&](const auto& n) { return n.output(0) == out; });
    REQUIRE(producer != e.nodes.end());
    CHECK(producer->op_type() == "Concat");
    CHECK(producer->input_size() == 2);
  }
}
