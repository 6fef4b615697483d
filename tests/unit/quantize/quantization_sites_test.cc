// Where a model is quantized (src/quantize/quantization_sites.h) and the QDQ
// model written there (src/quantize/qdq_insertion.h).
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>

#include "load/loader.h"
#include "quantize/qdq_insertion.h"
#include "quantize/quantization_sites.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::quantize;

namespace {

// A Conv+Relu read by an Add and a GlobalAveragePool, whose flattened output
// a MatMul reads; an integer Add on the side.
const char* const kModel = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,4,4] x) => (float[1,3,4,4] y, float[1,3] z, int64[4] k)
    <float[3,2,1,1] w = {1.0, -0.6, 0.25, 2.0, 0.0, -1.0}, float[3] b = {0.1, 0.2, -0.3},
     float[3,3] m = {1, 2, 3, 4, 5, 6, 7, 8, 9}> {
    c = Conv (x, w, b)
    r = Relu (c)
    y = Add (r, r)
    gp = GlobalAveragePool (r)
    f = Flatten (gp)
    z = MatMul (f, m)
    sh = Shape (x)
    k = Add (sh, sh)
  })";

onnx::ModelProto Loaded() { return LoadModelProto(test::ParseModel(kModel), "sites.onnx").model(); }

const onnx::NodeProto& Producer(const onnx::GraphProto& g, const std::string& value) {
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (o == value) return n;
  FAIL("no producer of " << value);
  throw;
}

const onnx::TensorProto& Initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return t;
  FAIL("no initializer " << name);
  throw;
}

const onnx::NodeProto& NodeOfType(const onnx::GraphProto& g, const std::string& op) {
  for (const auto& n : g.node())
    if (n.op_type() == op) return n;
  FAIL("no " << op);
  throw;
}

}  // namespace

TEST_CASE("Products with constant weights are anchors, and the float activations around the listed ops are quantized",
          "[quantize]") {
  const onnx::ModelProto model = Loaded();
  const QuantizationSites sites = FindQuantizationSites(model.graph());
  REQUIRE(sites.anchors.size() == 2);
  const Anchor& conv = sites.anchors[0];
  CHECK(conv.op_type == "Conv");
  CHECK(conv.weight_axis == 0);
  CHECK(conv.bias_slot == 2);
  CHECK(conv.data_inputs == std::vector<std::string>{"x"});
  CHECK(conv.output == "c");
  const Anchor& matmul = sites.anchors[1];
  CHECK(matmul.op_type == "MatMul");
  CHECK(matmul.weight_axis == 1);
  CHECK(matmul.bias_slot == -1);
  CHECK(matmul.data_inputs == std::vector<std::string>{"f"});
  // x first (a graph input), then by producer; c is quantized after its Relu;
  // the graph outputs y and z, which nothing reads, and the int64 Add are not.
  CHECK(sites.activations == std::vector<std::string>{"x", "r", "gp", "f"});

  const QuantizationSites kept = FindQuantizationSites(model.graph(), {conv.name});
  REQUIRE(kept.anchors.size() == 1);
  CHECK(kept.anchors[0].op_type == "MatMul");
  CHECK(kept.activations == std::vector<std::string>{"r", "gp", "f"});  // x: only the float Conv read it
}

TEST_CASE("The QDQ model reads every quantized activation dequantized, and int8 weights and int32 biases",
          "[quantize]") {
  const onnx::ModelProto model = Loaded();
  const QuantizationSites sites = FindQuantizationSites(model.graph());
  std::map<std::string, ActivationParams> params;
  for (const auto& name : sites.activations) params[name] = {0.05f, 7};
  params["x"] = {0.25f, 128};
  const onnx::ModelProto q = InsertQdq(model, sites, params, 127);
  const onnx::GraphProto& g = q.graph();
  LoadModelProto(q, "sites_qdq.onnx");  // checked as the loader checks every model

  const onnx::NodeProto& conv = NodeOfType(g, "Conv");
  const onnx::NodeProto& x_dq = Producer(g, conv.input(0));
  REQUIRE(x_dq.op_type() == "DequantizeLinear");
  const onnx::NodeProto& x_q = Producer(g, x_dq.input(0));
  CHECK(x_q.op_type() == "QuantizeLinear");
  CHECK(x_q.input(0) == "x");
  CHECK(Initializer(g, x_q.input(2)).data_type() == onnx::TensorProto::UINT8);

  const onnx::NodeProto& w_dq = Producer(g, conv.input(1));
  REQUIRE(w_dq.op_type() == "DequantizeLinear");
  CHECK(w_dq.attribute(0).name() == "axis");
  CHECK(w_dq.attribute(0).i() == 0);
  const onnx::TensorProto& w = Initializer(g, w_dq.input(0));
  CHECK(w.data_type() == onnx::TensorProto::INT8);
  const std::string& wq = w.raw_data();
  CHECK(std::vector<int>(reinterpret_cast<const std::int8_t*>(wq.data()), reinterpret_cast<const std::int8_t*>(wq.data()) + wq.size()) == std::vector<int>{127, -76, 16, 127, 0, -127});
  CHECK(Initializer(g, w_dq.input(1)).dims(0) == 3);

  const onnx::NodeProto& b_dq = Producer(g, conv.input(2));
  REQUIRE(b_dq.op_type() == "DequantizeLinear");
  const onnx::TensorProto& b = Initializer(g, b_dq.input(0));
  CHECK(b.data_type() == onnx::TensorProto::INT32);
  std::vector<std::int32_t> bias(3);
  std::memcpy(bias.data(), b.raw_data().data(), 12);
  // scale 0.25 * (1/127), 0.25 * (2/127), 0.25 * (1/127)
  CHECK(bias == std::vector<std::int32_t>{51, 51, -152});  // 0.1 * 508 = 50.8, 0.2 * 254 = 50.8, -0.3 * 508 = -152.4

  const onnx::NodeProto& matmul = NodeOfType(g, "MatMul");
  CHECK(Producer(g, matmul.input(0)).op_type() == "DequantizeLinear");
  const onnx::NodeProto& m_dq = Producer(g, matmul.input(1));
  REQUIRE(m_dq.op_type() == "DequantizeLinear");
  CHECK(m_dq.attribute(0).i() == 1);

  // Graph outputs nothing reads stay float alone; the float weights are gone.
  for (const auto& n : g.node())
    if (n.op_type() == "QuantizeLinear") CHECK((n.input(0) != "y" && n.input(0) != "z"));
  for (const auto& t : g.initializer()) CHECK((t.name() != "w" && t.name() != "b" && t.name() != "m"));
  const onnx::NodeProto& add = Producer(g, "y");
  CHECK(Producer(g, add.input(0)).op_type() == "DequantizeLinear");  // r, after the Relu
  CHECK(Producer(g, Producer(g, add.input(0)).input(0)).input(0) == "r");
}
