// The down-conversion walk (src/load/down_conversion.cc): every graph, body
// and function is visited; adapters that need dims wait for shape inference;
// what only rewritten nodes read goes; what opset 17 cannot express is refused.
#include <catch2/catch.hpp>

#include <onnx/defs/parser.h>

#include "conversion_step.h"
#include "load/conversion_steps.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using Names = std::vector<std::string>;

namespace {

OpsetConversion Down(onnx::ModelProto& model) { return test::RunConversionStep(load::ConvertDown, model, "new.onnx"); }

Names OpTypes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  Names types;
  for (const auto& n : nodes) types.push_back(n.op_type());
  return types;
}

Names InitializerNames(const onnx::GraphProto& g) {
  Names names;
  for (const auto& t : g.initializer()) names.push_back(t.name());
  return names;
}

std::vector<std::int64_t> Ints(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

}  // namespace

TEST_CASE("the main graph: nodes adapted, named, recorded, constants only they read dropped", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 9, opset_import: ["" : 18]>
    g (float[2,3,4] x, int64[1] kept) => (float[2,4] y, float[2,3,4] z)
      <int64[1] axes = {1}, int64[1] kept = {0}> {
      y = ReduceMean <keepdims = 0> (x, axes)
      z = Mish (x)
    })");
  auto record = Down(model);
  const auto& g = model.graph();
  CHECK(OpTypes(g.node()) == Names{"ReduceMean", "Softplus", "Tanh", "Mul"});
  CHECK(Ints(g.node(0), "axes") == std::vector<std::int64_t>{1});
  CHECK(g.node(0).input_size() == 1);
  // 'axes' was read by the rewritten node only; 'kept' is a graph input and stays.
  CHECK(InitializerNames(g) == Names{"kept"});
  CHECK(model.ir_version() == 8);
  CHECK(load::DefaultOpset(model) == 17);
  CHECK(record.to_opset == 17);
  CHECK(record.to_ir == 8);
  REQUIRE(record.nodes.size() == 2);
  CHECK(record.nodes[0].node == "ReduceMean_0");  // unnamed nodes get a fresh name
  CHECK(record.nodes[0].op_type == "ReduceMean");
  CHECK(record.nodes[0].adapter == "ReduceMean-18: axes input -> axes attribute");
  CHECK(record.nodes[1].node == "Mish_1");
  CHECK(g.node(3).name() == "Mish_1");
}

TEST_CASE("If bodies are converted in their scope, reading outer constants", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (bool b, float[2,3] x) => (float[2] y) <int64[1] axes = {1}> {
      y = If (b) <then_branch = t () => (float[2] o) { o = ReduceMax <keepdims = 0> (x, axes) },
                  else_branch = e () => (float[2] p) { p = ReduceMin <keepdims = 0> (x, axes) }>
    })");
  auto record = Down(model);
  const auto& then_body = model.graph().node(0).attribute(0).g();
  const auto& else_body = model.graph().node(0).attribute(1).g();
  CHECK(Ints(then_body.node(0), "axes") == std::vector<std::int64_t>{1});
  CHECK(Ints(else_body.node(0), "axes") == std::vector<std::int64_t>{1});
  CHECK(then_body.node(0).input_size() == 1);
  CHECK(record.nodes.size() == 2);
  CHECK(model.graph().initializer_size() == 0);  // no longer read by anyone
}

TEST_CASE("a model-local function gets Constant nodes for what adapters add, and opset 17", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 9, opset_import: ["" : 18, "local" : 1]>
    g (float[1,4,2,2] x, float[2] s, float[2] b) => (float[1,4,2,2] y) { y = local.Norm (x, s, b) })");
  onnx::FunctionProto f;
  REQUIRE(onnx::OnnxParser::Parse(f, R"(
    <domain: "local", opset_import: ["" : 18]>
    Norm (x, s, b) => (y) { y = GroupNormalization <num_groups = 2> (x, s, b) })").IsOK());
  *model.add_functions() = f;
  Down(model);
  const auto& converted = model.functions(0);
  CHECK(converted.opset_import(0).version() == 17);
  // The three initializers of the rewrite come first, as Constants.
  REQUIRE(converted.node_size() == 17);
  CHECK(OpTypes(converted.node()) ==
        Names{"Constant", "Constant", "Constant", "Shape", "Reshape", "ReduceMean", "Sub", "Mul", "ReduceMean", "Add",
              "Sqrt", "Div", "Reshape", "Reshape", "Mul", "Add", "Reshape"});
  CHECK(converted.node(0).output(0) == "GroupNormalization_0/grouped_shape");
  CHECK(model.graph().node(0).op_type() == "Norm");  // another domain: unchanged
}

TEST_CASE("a Pad needing the rank of an intermediate waits for shape inference", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,3,4,4] x) => (float[1,3,4,6] y) <int64[2] pads = {1, 1}, int64[1] axes = {-1}> {
      r = Relu (x)
      y = Pad (r, pads, , axes)
    })");
  auto record = Down(model);
  const auto& pad = model.graph().node(1);
  REQUIRE(pad.op_type() == "Pad");
  CHECK(pad.input_size() == 2);
  CHECK(pad.input(1) == "Pad_1/pads");
  const onnx::TensorProto* full = nullptr;
  for (const auto& t : model.graph().initializer())
    if (t.name() == "Pad_1/pads") full = &t;
  REQUIRE(full != nullptr);
  CHECK(std::vector<std::int64_t>(full->int64_data().begin(), full->int64_data().end()) ==
        std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(record.nodes.size() == 1);
}

TEST_CASE("what opset 17 cannot express is refused, naming the node", "[down_conversion]") {
  auto after_17 = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,4,3] x, int64[2] s, int64[2] k) => (float y) { y = Col2Im (x, s, k) })");
  auto e = test::ErrorOf([&] { Down(after_17); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'Col2Im_0' (Col2Im, opset 18): first defined after opset 17, and onnx-fuse has "
                     "no rewrite of it into opset-17 ops");

  auto no_input = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2] x) => (float y) { y = ReduceMean () })");
  e = test::ErrorOf([&] { Down(no_input); });
  CHECK_THAT(e.message, Catch::EndsWith("(ReduceMean, opset 18): has no data input or no output"));
}
