// QLinearConv and QLinearMatMul written as their QDQ form
// (src/rewrite/qoperator_as_qdq.cc): the structure of the rewritten graph
// and the nodes it keeps. The numbers are ONNX's node tests through the
// plans (ctest conformance.node: test_qlinearconv, test_qlinearmatmul_*).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "rewrite/qoperator_as_qdq.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

std::vector<std::string> OpTypes(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node& n : graph.nodes()) ops.push_back(n.op_type);
  return ops;
}

const Node& Producer(const Graph& graph, const std::string& value) {
  return graph.node(graph.value(*graph.FindValue(value)).producer);
}

const std::string kConv = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (uint8[1,2,4,4] x, float run_time_scale) => (uint8[1,3,2,2] y, uint8[1,3,2,2] z) {
    xs = Constant <value = float {0.5}> ()
    xz = Constant <value = uint8 {10}> ()
    w = Constant <value = int8[3,2,3,3] {1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
                                          1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9}> ()
    ws = Constant <value = float[3] {0.25, 0.5, 2.0}> ()
    wz = Constant <value = int8[3] {0, 0, 0}> ()
    ys = Constant <value = float {4.0}> ()
    yz = Constant <value = uint8 {3}> ()
    b = Constant <value = int32[3] {1, -2, 3}> ()
    y = QLinearConv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, xs, xz, w, ws, wz, ys, yz, b)
    z = QLinearConv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, run_time_scale, xz, w, ws, wz, ys, yz, b)
  })";

}  // namespace

TEST_CASE("QLinearConv becomes DequantizeLinear, Conv with its attributes, QuantizeLinear", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(kConv);
  const QOperatorRewrite result = ExpressQOperatorsAsQdq(graph);
  REQUIRE(result.rewritten.size() == 1);
  REQUIRE(result.kept.size() == 1);  // z: its x_scale is computed at run time
  CHECK(result.kept[0].second == "x_scale or w_scale is not a constant");
  const Node& quantize = Producer(graph, "y");
  CHECK(quantize.op_type == "QuantizeLinear");
  CHECK(graph.value(quantize.inputs[1]).name == "ys");
  const Node& conv = Producer(graph, graph.value(quantize.inputs[0]).name);
  REQUIRE(conv.op_type == "Conv");
  CHECK(AttrInts(conv, "strides") == std::vector<std::int64_t>{2, 2});
  CHECK(AttrInts(conv, "pads") == std::vector<std::int64_t>{1, 1, 1, 1});
  REQUIRE(conv.inputs.size() == 3);
  const Node& x = Producer(graph, graph.value(conv.inputs[0]).name);
  const Node& w = Producer(graph, graph.value(conv.inputs[1]).name);
  const Node& bias = Producer(graph, graph.value(conv.inputs[2]).name);
  CHECK(x.op_type == "DequantizeLinear");
  CHECK(graph.value(x.inputs[0]).name == "x");
  CHECK(w.op_type == "DequantizeLinear");
  CHECK(AttrInt(w, "axis", 1) == 0);
  CHECK(bias.op_type == "DequantizeLinear");
  CHECK(AttrInt(bias, "axis", 1) == 0);
  // The bias's scale is x_scale * w_scale per output channel, its zero point int32 0.
  const Tensor scale = TensorFromProto(*graph.ConstantTensor(bias.inputs[1]), "scale");
  CHECK(scale.data == std::vector<float>{0.125f, 0.25f, 1.0f});
  const Tensor zero = TensorFromProto(*graph.ConstantTensor(bias.inputs[2]), "zero");
  CHECK(zero.DataType() == onnx::TensorProto::INT32);
  CHECK(zero.int_data == std::vector<std::int64_t>{0, 0, 0});
  // The kept node is still there, and the rewritten graph is typed.
  CHECK(Producer(graph, "z").op_type == "QLinearConv");
  CHECK(graph.value(conv.outputs[0]).type.dims == std::vector<std::int64_t>{1, 3, 2, 2});
}

TEST_CASE("QLinearMatMul becomes DequantizeLinear, MatMul, QuantizeLinear, with b per column on its last axis",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (uint8[2,3,4] a) => (uint8[2,3,2] y) {
      s = Constant <value = float {0.5}> ()
      z = Constant <value = uint8 {128}> ()
      b = Constant <value = int8[4,2] {1, 2, 3, 4, 5, 6, 7, 8}> ()
      bs = Constant <value = float[2] {0.25, 0.5}> ()
      bz = Constant <value = int8[2] {0, 1}> ()
      y = QLinearMatMul (a, s, z, b, bs, bz, s, z)
    })");
  const QOperatorRewrite result = ExpressQOperatorsAsQdq(graph);
  CHECK(result.rewritten.size() == 1);
  CHECK(result.kept.empty());
  const Node& matmul = Producer(graph, graph.value(Producer(graph, "y").inputs[0]).name);
  REQUIRE(matmul.op_type == "MatMul");
  const Node& b = Producer(graph, graph.value(matmul.inputs[1]).name);
  CHECK(b.op_type == "DequantizeLinear");
  CHECK(AttrInt(b, "axis", 0) == 1);
}

TEST_CASE("a graph without QOperator ops is left as it is", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const std::vector<std::string> before = OpTypes(graph);
  const QOperatorRewrite result = ExpressQOperatorsAsQdq(graph);
  CHECK(result.rewritten.empty());
  CHECK(OpTypes(graph) == before);
}
