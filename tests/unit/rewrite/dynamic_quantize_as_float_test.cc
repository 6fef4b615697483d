// DynamicQuantizeLinear cast to float, written as float ops
// (src/rewrite/dynamic_quantize_as_float.cc): the structure of the rewritten
// graph and its values against the host evaluator's DynamicQuantizeLinear.
// The numbers against ONNX Runtime are ctest e2e.quantized_ops.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "ir/tensor_io.h"
#include "rewrite/dynamic_quantize_as_float.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// y = Cast (DynamicQuantizeLinear (x).y), s and z as outputs too: the float form and the op.
const char* kModel = R"(<ir_version: 8, opset_import: ["" : 17]>
  g (float[8] x) => (float[8] y, float s, uint8 z) {
    q, s, z = DynamicQuantizeLinear (x)
    y = Cast <to = 1> (q)
  })";

bool HasOp(const Graph& graph, const std::string& op) {
  for (const Node& n : graph.nodes())
    if (n.op_type == op) return true;
  return false;
}

// The graph's outputs for input x, node by node on the host evaluator.
std::vector<Tensor> Run(const Graph& graph, const std::vector<float>& x) {
  std::map<ValueId, Tensor> values;
  Tensor input;
  input.dims = {8};
  input.data = x;
  values[graph.inputs()[0]] = input;
  for (const Node& node : graph.nodes()) {
    std::vector<const Tensor*> inputs;
    for (ValueId v : node.inputs) {
      if (!values.count(v)) values[v] = TensorFromProto(*graph.ConstantTensor(v), graph.value(v).name);
      inputs.push_back(&values.at(v));
    }
    std::vector<Tensor> outputs = eval::EvalOnHost(node, inputs, graph.opset());
    for (std::size_t i = 0; i < outputs.size(); ++i) values[node.outputs[i]] = std::move(outputs[i]);
  }
  std::vector<Tensor> result;
  for (ValueId v : graph.outputs()) result.push_back(values.at(v));
  return result;
}

}  // namespace

TEST_CASE("DynamicQuantizeLinear read through a Cast to float becomes float ops with the op's values",
          "[rewrite][quantize]") {
  const Graph reference = test::GraphFromText(kModel);
  Graph graph = test::GraphFromText(kModel);
  REQUIRE(ExpressDynamicQuantizeAsFloat(graph).rewritten.size() == 1);
  CHECK_FALSE(HasOp(graph, "DynamicQuantizeLinear"));
  CHECK(HasOp(graph, "ReduceMax"));
  // Ties of x / scale (scale 2/255 here: 1/255 is half a step), both signs, and an x of zeros.
  const std::vector<std::vector<float>> inputs = {
      {-1.0f, 1.0f, 0.0f, 1.0f / 255, 3.0f / 255, -0.2f, 0.5f, 0.9f},
      {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 2.0f},
      {-3.0f, -2.0f, -1.0f, -0.5f, -0.25f, -0.125f, -4.0f, -1e-3f},
      {0, 0, 0, 0, 0, 0, 0, 0}};
  for (const std::vector<float>& x : inputs) {
    const std::vector<Tensor> want = Run(reference, x), got = Run(graph, x);
    REQUIRE(got.size() == 3);
    CHECK(got[0].data == want[0].data);  // the quantized values, as float
    CHECK(got[1].data == want[1].data);  // y_scale: 1 for zeros
    CHECK(got[2].int_data == want[2].int_data);
  }
}

TEST_CASE("DynamicQuantizeLinear whose y is read as it is stays", "[rewrite][quantize]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[8] x) => (uint8[8] q, float[8] y) {
      q, s, z = DynamicQuantizeLinear (x)
      y = Cast <to = 1> (q)
    })");
  CHECK(ExpressDynamicQuantizeAsFloat(graph).rewritten.empty());
  CHECK(HasOp(graph, "DynamicQuantizeLinear"));
}
