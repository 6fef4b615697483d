// MatMulInteger and ConvInteger cast to float, written as float products
// (src/rewrite/integer_products_as_float.cc): the structure of the rewritten
// graph. The numbers against ONNX Runtime are ctest e2e.quantized_ops and the
// dynamically quantized encoder of e2e.dynamic_shapes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "rewrite/integer_products_as_float.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

const Node& Producer(const Graph& graph, const std::string& value) {
  return graph.node(graph.value(*graph.FindValue(value)).producer);
}

const Node& InputProducer(const Graph& graph, const Node& node, std::size_t i) {
  return graph.node(graph.value(node.inputs[i]).producer);
}

bool HasOp(const Graph& graph, const std::string& op) {
  for (const Node& n : graph.nodes())
    if (n.op_type == op) return true;
  return false;
}

}  // namespace

TEST_CASE("MatMulInteger then Cast to float becomes MatMul of the shifted input and the shifted constant weight",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,2] y) {
      q, s, z = DynamicQuantizeLinear (x)
      w = Constant <value = int8[3,2] {1, 2, 3, 4, 5, 6}> ()
      wz = Constant <value = int8[2] {1, -1}> ()
      acc = MatMulInteger (q, w, z, wz)
      y = Cast <to = 1> (acc)
    })");
  const IntegerProductsRewrite result = ExpressIntegerProductsAsFloat(graph);
  REQUIRE(result.rewritten.size() == 1);
  CHECK_FALSE(HasOp(graph, "MatMulInteger"));
  const Node& matmul = Producer(graph, "y");
  REQUIRE(matmul.op_type == "MatMul");
  // w - wz per column: {1-1, 2+1, 3-1, 4+1, 5-1, 6+1}.
  REQUIRE(graph.IsConstant(matmul.inputs[1]));
  CHECK(TensorFromProto(*graph.ConstantTensor(matmul.inputs[1]), "w").data ==
        std::vector<float>{0, 3, 2, 5, 4, 7});
  const Node& shifted = InputProducer(graph, matmul, 0);
  REQUIRE(shifted.op_type == "Sub");
  CHECK(InputProducer(graph, shifted, 0).op_type == "Cast");
  CHECK(graph.value(InputProducer(graph, shifted, 0).inputs[0]).name == "q");
  CHECK(InputProducer(graph, shifted, 1).op_type == "Cast");
  CHECK(graph.value(InputProducer(graph, shifted, 1).inputs[0]).name == "z");
  CHECK(graph.value(matmul.outputs[0]).type.elem_type == onnx::TensorProto::FLOAT);
}

TEST_CASE("ConvInteger then Cast becomes Conv with its attributes over the shifted values", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (uint8[1,1,3,3] x) => (float[1,1,3,3] y) {
      xz = Constant <value = uint8 {10}> ()
      w = Constant <value = int8[1,1,1,1] {3}> ()
      wz = Constant <value = int8 {1}> ()
      acc = ConvInteger <pads = [0, 0, 0, 0]> (x, w, xz, wz)
      y = Cast <to = 1> (acc)
    })");
  REQUIRE(ExpressIntegerProductsAsFloat(graph).rewritten.size() == 1);
  const Node& conv = Producer(graph, "y");
  REQUIRE(conv.op_type == "Conv");
  CHECK(AttrInts(conv, "pads") == std::vector<std::int64_t>{0, 0, 0, 0});
  CHECK(TensorFromProto(*graph.ConstantTensor(conv.inputs[1]), "w").data == std::vector<float>{2});
}

TEST_CASE("an integer product whose int32 result is read as it is stays", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (uint8[2,3] a, uint8[3,2] b) => (int32[2,2] y, float[2,2] f) {
      y = MatMulInteger (a, b)
      f = Cast <to = 1> (y)
    })");
  CHECK(ExpressIntegerProductsAsFloat(graph).rewritten.empty());
  CHECK(HasOp(graph, "MatMulInteger"));
}

TEST_CASE("a MatMulInteger whose a has a zero point per row stays", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (uint8[2,3] a, uint8[3,2] b) => (float[2,2] f) {
      az = Constant <value = uint8[2] {1, 2}> ()
      y = MatMulInteger (a, b, az)
      f = Cast <to = 1> (y)
    })");
  CHECK(ExpressIntegerProductsAsFloat(graph).rewritten.empty());
  CHECK(HasOp(graph, "MatMulInteger"));
}
