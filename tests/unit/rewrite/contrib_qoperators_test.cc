// ONNX Runtime's quantized com.microsoft ops written as their QDQ form
// (src/rewrite/contrib_qoperators.cc, through ExpressQOperatorsAsQdq): the
// structure of the rewritten graph. The numbers against ONNX Runtime's own
// kernels are ctest e2e.quantized_ops.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "onnxfuse/error.h"
#include "rewrite/qoperator_as_qdq.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

const Node& Producer(const Graph& graph, const std::string& value) {
  return graph.node(graph.value(*graph.FindValue(value)).producer);
}

const Node& InputProducer(const Graph& graph, const Node& node, std::size_t i) {
  return Producer(graph, graph.value(node.inputs[i]).name);
}

std::vector<float> FloatsOf(const Graph& graph, ValueId v) {
  return TensorFromProto(*graph.ConstantTensor(v), "constant").data;
}

}  // namespace

TEST_CASE("QLinearAdd becomes Add of two DequantizeLinear, then QuantizeLinear to C's scale and zero point",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (uint8[1,4,3,3] a, uint8[1,4,1,1] b) => (uint8[1,4,3,3] c) {
      as = Constant <value = float {0.5}> ()
      az = Constant <value = uint8 {128}> ()
      bs = Constant <value = float {0.25}> ()
      bz = Constant <value = uint8 {3}> ()
      cs = Constant <value = float {1.0}> ()
      cz = Constant <value = uint8 {7}> ()
      c = com.microsoft.QLinearAdd (a, as, az, b, bs, bz, cs, cz)
    })");
  const QOperatorRewrite result = ExpressQOperatorsAsQdq(graph);
  REQUIRE(result.rewritten.size() == 1);
  const Node& quantize = Producer(graph, "c");
  REQUIRE(quantize.op_type == "QuantizeLinear");
  CHECK(quantize.domain.empty());
  CHECK(graph.value(quantize.inputs[1]).name == "cs");
  CHECK(graph.value(quantize.inputs[2]).name == "cz");
  const Node& add = InputProducer(graph, quantize, 0);
  REQUIRE(add.op_type == "Add");
  const Node& a = InputProducer(graph, add, 0);
  const Node& b = InputProducer(graph, add, 1);
  CHECK(a.op_type == "DequantizeLinear");
  CHECK(graph.value(a.inputs[0]).name == "a");
  CHECK(graph.value(b.inputs[1]).name == "bs");
  // Typed after the rewrite: ONNX's inference knows every op now.
  CHECK(graph.value(add.outputs[0]).type.dims == std::vector<std::int64_t>{1, 4, 3, 3});
}

TEST_CASE("an absent output zero point is 0 of the input's type (QuantizeLinear alone would give uint8)",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (int8[2,5] x) => (int8[2,5] y) {
      xs = Constant <value = float {0.1}> ()
      ys = Constant <value = float {0.004}> ()
      y = com.microsoft.QLinearSigmoid (x, xs, , ys, )
    })");
  ExpressQOperatorsAsQdq(graph);
  const Node& quantize = Producer(graph, "y");
  REQUIRE(quantize.op_type == "QuantizeLinear");
  REQUIRE(quantize.inputs.size() == 3);
  const Tensor zero = TensorFromProto(*graph.ConstantTensor(quantize.inputs[2]), "zero");
  CHECK(zero.DataType() == onnx::TensorProto::INT8);
  CHECK(graph.value(quantize.outputs[0]).type.elem_type == onnx::TensorProto::INT8);
  CHECK(InputProducer(graph, quantize, 0).op_type == "Sigmoid");
}

TEST_CASE("QGemm: C as float, alpha * a_scale * b_scale per column, and b per column on axis 1 without transB",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (uint8[2,3] a) => (uint8[2,2] y) {
      as = Constant <value = float {0.5}> ()
      az = Constant <value = uint8 {100}> ()
      b = Constant <value = int8[3,2] {1, 2, 3, 4, 5, 6}> ()
      bs = Constant <value = float[2] {0.25, 2.0}> ()
      bz = Constant <value = int8[2] {0, 0}> ()
      c = Constant <value = int32[2] {8, -4}> ()
      ys = Constant <value = float {0.1}> ()
      yz = Constant <value = uint8 {9}> ()
      y = com.microsoft.QGemm <alpha = 0.5> (a, as, az, b, bs, bz, c, ys, yz)
    })");
  ExpressQOperatorsAsQdq(graph);
  const Node& quantize = Producer(graph, "y");
  REQUIRE(quantize.op_type == "QuantizeLinear");
  const Node& gemm = InputProducer(graph, quantize, 0);
  REQUIRE(gemm.op_type == "Gemm");
  CHECK(AttrFloat(gemm, "alpha", 1.0f) == 0.5f);
  CHECK(AttrFloat(gemm, "beta", 1.0f) == 1.0f);
  const Node& b = InputProducer(graph, gemm, 1);
  CHECK(b.op_type == "DequantizeLinear");
  CHECK(AttrInt(b, "axis", 1) == 1);
  REQUIRE(gemm.inputs.size() == 3);
  // Gemm adds beta * C after alpha * A B: C = 8 * 0.5 * 0.5 * 0.25, -4 * 0.5 * 0.5 * 2.
  CHECK(FloatsOf(graph, gemm.inputs[2]) == std::vector<float>{0.5f, -2.0f});
}

TEST_CASE("QGemm without y_scale gives the float Gemm's output itself", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (uint8[2,3] a) => (float[2,2] y) {
      as = Constant <value = float {0.5}> ()
      az = Constant <value = uint8 {100}> ()
      b = Constant <value = int8[2,3] {1, 2, 3, 4, 5, 6}> ()
      bs = Constant <value = float[2] {0.25, 2.0}> ()
      bz = Constant <value = int8[2] {0, 0}> ()
      y = com.microsoft.QGemm <transB = 1> (a, as, az, b, bs, bz)
    })");
  ExpressQOperatorsAsQdq(graph);
  const Node& gemm = Producer(graph, "y");
  REQUIRE(gemm.op_type == "Gemm");
  CHECK(AttrInt(gemm, "transB", 0) == 1);
  CHECK(AttrInt(InputProducer(graph, gemm, 1), "axis", 1) == 0);  // per column of B': B's rows
  CHECK(graph.value(gemm.outputs[0]).type.elem_type == onnx::TensorProto::FLOAT);
}

TEST_CASE("QLinearConcat dequantizes each input with its own scale and concatenates on its axis",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (uint8[1,2,3] a, uint8[1,4,3] b) => (uint8[1,6,3] y) {
      ys = Constant <value = float {0.5}> ()
      yz = Constant <value = uint8 {128}> ()
      as = Constant <value = float {0.25}> ()
      az = Constant <value = uint8 {120}> ()
      bs = Constant <value = float {1.0}> ()
      bz = Constant <value = uint8 {130}> ()
      y = com.microsoft.QLinearConcat <axis = 1> (ys, yz, a, as, az, b, bs, bz)
    })");
  ExpressQOperatorsAsQdq(graph);
  const Node& concat = InputProducer(graph, Producer(graph, "y"), 0);
  REQUIRE(concat.op_type == "Concat");
  CHECK(AttrInt(concat, "axis", 0) == 1);
  REQUIRE(concat.inputs.size() == 2);
  CHECK(graph.value(InputProducer(graph, concat, 1).inputs[1]).name == "bs");
  CHECK(graph.value(concat.outputs[0]).type.dims == std::vector<std::int64_t>{1, 6, 3});
}

TEST_CASE("a com.microsoft QOperator without a QDQ form here is refused, naming the node and why",
          "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (uint8[1,3,3,8] x) => (uint8[1,1,1,8] y) {
      xs = Constant <value = float {0.5}> ()
      xz = Constant <value = uint8 {128}> ()
      y = com.microsoft.QLinearGlobalAveragePool <channels_last = 1> (x, xs, xz, xs, xz)
    })");
  try {
    ExpressQOperatorsAsQdq(graph);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("QLinearGlobalAveragePool"));
    CHECK_THAT(what, Catch::Contains("channels_last (NHWC) is not rewritten"));
  }
}
