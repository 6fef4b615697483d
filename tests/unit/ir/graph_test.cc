// The graph IR (ir/graph.h): values, use-lists, constants, captured
// names of subgraphs, the errors of a malformed graph, and TensorType.
#include <catch2/catch.hpp>

#include <limits>

#include "ir/fused_domain.h"
#include "onnxfuse/error.h"
#include "ir/graph.h"
#include "test_models.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;

namespace {

Graph Build(const std::string& text) { return Graph(test::ParseModel(text), "m.onnx"); }

TensorType Shaped(std::int32_t elem_type, std::vector<std::int64_t> dims, Strings params = {}) {
  TensorType t;
  t.elem_type = elem_type;
  t.has_shape = true;
  t.dims = std::move(dims);
  t.dim_params = params.empty() ? Strings(t.dims.size()) : std::move(params);
  return t;
}

}  // namespace

TEST_CASE("values, producers and use-lists follow the node list", "[graph]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["ai.onnx" : 13]>
    g (float[2] x, float[2] w) => (float[2] y, float[2] s) <float[2] w = {1, 2}, float[1] k = {3}> {
      s = Add (x, x)
      m = Mul (s, k)
      y = Relu (m)
    })");
  model.mutable_graph()->mutable_node(2)->set_domain("ai.onnx");
  Graph g(model, "m.onnx");
  CHECK(g.opset() == 13);
  CHECK(g.source_path() == "m.onnx");
  REQUIRE(g.num_nodes() == 3);
  CHECK(g.node(0).name == "Add_0");  // unnamed nodes are named "<op_type>_<index>"
  CHECK(g.node(2).domain.empty());   // "ai.onnx" is spelled ""
  // Graph inputs that are initializers are not inputs().
  REQUIRE(g.inputs().size() == 1);
  CHECK(g.value(g.inputs()[0]).name == "x");
  const Value& w = g.value(*g.FindValue("w"));
  CHECK(w.is_graph_input);
  CHECK(w.initializer == 0);
  CHECK(w.type.ShapeString() == "[2]");
  // One consumer entry per use: Add reads x twice.
  const Value& x = g.value(*g.FindValue("x"));
  CHECK(x.consumers == std::vector<NodeId>{0, 0});
  CHECK(x.producer == kNoNode);
  const Value& s = g.value(*g.FindValue("s"));
  CHECK(s.producer == 0);
  CHECK(s.is_graph_output);
  CHECK(s.consumers == std::vector<NodeId>{1});
  CHECK(g.Consumers(0) == std::vector<NodeId>{1});
  CHECK(g.outputs().size() == 2);
  CHECK(g.value(g.outputs()[0]).name == "y");
  CHECK_FALSE(g.FindValue("nothing"));
}

TEST_CASE("Consumers lists each consumer once, in node order, over all outputs", "[graph]") {
  Graph g = Build(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[2] c, float[2] d) {
      a, b = Split (x)
      c = Add (b, a)
      d = Mul (a, a)
    })");
  CHECK(g.Consumers(0) == std::vector<NodeId>{1, 2});
  CHECK(g.value(*g.FindValue("a")).consumers == std::vector<NodeId>{1, 2, 2});
}

TEST_CASE("constants: initializers and Constant outputs, and released data keeps the value", "[graph]") {
  Graph g = Build(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) <float[2] w = {1, 2}> {
      k = Constant <value = float[2] {5, 6}> ()
      a = Add (x, w)
      y = Mul (a, k)
    })");
  ValueId w = *g.FindValue("w"), k = *g.FindValue("k"), a = *g.FindValue("a"), x = *g.FindValue("x");
  CHECK(g.IsConstant(w));
  CHECK(g.IsConstant(k));
  CHECK_FALSE(g.IsConstant(a));
  CHECK_FALSE(g.IsConstant(x));
  REQUIRE(g.ConstantTensor(k) != nullptr);
  CHECK(g.ConstantTensor(k)->float_data(1) == 6.0f);
  CHECK(g.ConstantTensor(a) == nullptr);

  g.ReleaseInitializer(w);
  CHECK(g.IsReleased(w));
  CHECK(g.IsConstant(w));
  CHECK(g.ConstantTensor(w) == nullptr);
  const auto& stub = g.model().graph().initializer(0);
  CHECK(stub.name() == "w");
  CHECK(stub.dims_size() == 1);
  CHECK(stub.float_data_size() == 0);
  g.ReleaseInitializer(k);  // not an initializer: no effect
  CHECK_FALSE(g.IsReleased(k));
  CHECK(g.ConstantTensor(k) != nullptr);
}

TEST_CASE("names a subgraph reads from the enclosing scope are implicit inputs", "[graph]") {
  Graph g = Build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (bool c, float[4] a, float[4] b) => (float[4] y) {
      r = Relu (a)
      y = If (c) <then_branch = g1 () => (float[4] o1) { t = Neg (r)  o1 = Add (t, b) },
                  else_branch = g2 () => (float[4] o2) { o2 = Abs (r) }>
    })");
  const Node& node = g.node(1);
  CHECK(CapturedNames(node.proto) == Strings{"r", "b"});
  CHECK(node.num_explicit_inputs == 1);
  REQUIRE(node.inputs.size() == 3);
  CHECK(g.value(node.inputs[1]).name == "r");
  CHECK(g.value(*g.FindValue("r")).consumers == std::vector<NodeId>{1});
}

TEST_CASE("a malformed graph is an invalid model naming the node and the value", "[graph]") {
  auto e = test::ErrorOf([] {
    Build(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] y) { y = Add (x, ghost) })");
  });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK(e.message == "m.onnx: node 'Add_0' (Add) reads 'ghost', which no node, graph input or initializer defines");

  e = test::ErrorOf([] {
    Build(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] y) { y = Relu (x)  y = Neg (x) })");
  });
  CHECK(e.message == "m.onnx: node 'Neg_1' (Neg) writes 'y', which is already defined by node 'Relu_0'");

  e = test::ErrorOf([] {
    Build(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] x2) { x = Relu (x) })");
  });
  CHECK_THAT(e.message, Catch::Contains("writes 'x', which is already defined as a graph input or initializer"));

  e = test::ErrorOf([] {
    Build(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] z) { y = Relu (x) })");
  });
  CHECK(e.message == "m.onnx: graph output 'z' is never defined");
}

TEST_CASE("TensorType: element counts, sizes and shapes, with overflow and symbols", "[graph]") {
  auto t = Shaped(onnx::TensorProto::FLOAT, {1, 64, 56, 56});
  CHECK(t.NumElements() == 200704);
  CHECK(t.SizeInBytes() == 802816);
  CHECK(t.ShapeString() == "[1,64,56,56]");
  CHECK(Shaped(onnx::TensorProto::FLOAT16, {3}).SizeInBytes() == 6);
  CHECK(Shaped(onnx::TensorProto::COMPLEX128, {2}).SizeInBytes() == 32);
  CHECK_FALSE(Shaped(onnx::TensorProto::STRING, {2}).SizeInBytes());
  CHECK(Shaped(onnx::TensorProto::FLOAT, {}).NumElements() == 1);

  auto symbolic = Shaped(onnx::TensorProto::FLOAT, {-1, 3, -1}, {"N", "", ""});
  CHECK(symbolic.ShapeString() == "[N,3,?]");
  CHECK_FALSE(symbolic.NumElements());
  CHECK(symbolic.SameShape(Shaped(onnx::TensorProto::FLOAT, {-1, 3, 7}, {"N", "", ""})) == false);  // ? vs 7
  auto named = Shaped(onnx::TensorProto::FLOAT, {-1, 3}, {"N", ""});
  CHECK(named.SameShape(Shaped(onnx::TensorProto::FLOAT, {-1, 3}, {"N", ""})));  // one symbol, one value
  CHECK_FALSE(named.SameShape(Shaped(onnx::TensorProto::FLOAT, {-1, 3}, {"M", ""})));
  CHECK_FALSE(symbolic.SameShape(symbolic));  // its anonymous dim may differ between two values

  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
  CHECK_FALSE(Shaped(onnx::TensorProto::FLOAT, {big, 3}).NumElements());
  CHECK_FALSE(Shaped(onnx::TensorProto::FLOAT, {big}).SizeInBytes());  // elements fit, bytes do not

  TensorType unknown;
  CHECK(unknown.ShapeString() == "[?]");
  CHECK_FALSE(unknown.NumElements());
  CHECK(t.SameShape(Shaped(onnx::TensorProto::INT64, {1, 64, 56, 56})));  // types are not compared
  CHECK_FALSE(t.SameShape(Shaped(onnx::TensorProto::FLOAT, {1, 64, 56})));
}

TEST_CASE("TensorTypeFromProto reads dims, symbols and missing shapes", "[graph]") {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::INT64);
  CHECK_FALSE(TensorTypeFromProto(type).has_shape);
  CHECK(TensorTypeFromProto(type).elem_type == onnx::TensorProto::INT64);
  tensor->mutable_shape()->add_dim()->set_dim_param("batch");
  tensor->mutable_shape()->add_dim()->set_dim_value(7);
  tensor->mutable_shape()->add_dim();
  auto t = TensorTypeFromProto(type);
  CHECK(t.dims == std::vector<std::int64_t>{-1, 7, -1});
  CHECK(t.dim_params == Strings{"batch", "", ""});
  CHECK(t.ShapeString() == "[batch,7,?]");

  onnx::TypeProto sequence;
  sequence.mutable_sequence_type();
  CHECK(TensorTypeFromProto(sequence).elem_type == 0);
  CHECK_FALSE(TensorTypeFromProto(sequence).has_shape);
}
