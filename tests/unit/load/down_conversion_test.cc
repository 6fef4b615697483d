// The down-conversion walk (src/load/down_conversion.cc): every graph, body
// and function is visited; adapters that need dims get them from shape
// inference of the part already converted, so chains of opset-18 ops convert;
// what only rewritten nodes read goes; what opset 17 cannot express is refused.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <onnx/defs/parser.h>

#include "conversion_step.h"
#include "load/conversion_steps.h"
#include "ir/graph.h"
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

/// The int64 values of initializer `name` of `g`; empty when there is none.
std::vector<std::int64_t> InitializerInts(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return {t.int64_data().begin(), t.int64_data().end()};
  return {};
}

/// The first node of `g` of type `op`; fails the test when there is none.
const onnx::NodeProto& First(const onnx::GraphProto& g, const std::string& op) {
  for (const auto& n : g.node())
    if (n.op_type() == op) return n;
  FAIL("no " << op << " node");
  throw std::logic_error("unreachable");
}

std::string ShapeOf(const Graph& graph, const std::string& value) {
  return graph.value(*graph.FindValue(value)).type.ShapeString();
}

// Conv -> GroupNormalization-18 -> Relu -> Split-18 (num_outputs) -> Add ->
// Pad-18 (axes): the Split reads dims of the GroupNormalization's expansion,
// the Pad the rank of what the Add of the Split's outputs gives.
const char* kChain = R"(
  <ir_version: 8, opset_import: ["" : 18]>
  g (float[1,8,12,12] x, float[8,8,3,3] w) => (float[1,4,15,15] y)
    <float[4] s = {0.5, 1, 1.5, 2}, float[4] b = {0.1, -0.2, 0.3, 0}, int64[4] pads = {1, 2, 2, 1},
     int64[2] axes = {2, 3}> {
    c = Conv <pads = [1, 1, 1, 1]> (x, w)
    n = GroupNormalization <num_groups = 4> (c, s, b)
    r = Relu (n)
    p, q = Split <axis = 1, num_outputs = 2> (r)
    a = Add (p, q)
    y = Pad <mode = "reflect"> (a, pads, , axes)
  })";

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

TEST_CASE("a Pad needing the rank of an intermediate gets it from shape inference", "[down_conversion]") {
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

TEST_CASE("a chain of opset-18 ops converts as a whole, each reading dims inferred through those before it",
          "[down_conversion]") {
  auto model = test::ParseModel(kChain);
  auto record = Down(model);
  const auto& g = model.graph();
  CHECK(OpTypes(g.node()) == Names{"Conv", "Shape", "Reshape", "ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt",
                                   "Div", "Reshape", "Reshape", "Mul", "Add", "Reshape", "Relu", "Split", "Add", "Pad"});
  CHECK(First(g, "Split").input_size() == 1);  // 8 channels in 2 even parts
  CHECK(First(g, "Split").attribute_size() == 1);  // axis; num_outputs gone
  const auto& pad = First(g, "Pad");
  REQUIRE(pad.input_size() == 2);
  CHECK(InitializerInts(g, pad.input(1)) == std::vector<std::int64_t>{0, 0, 1, 2, 0, 0, 2, 1});
  REQUIRE(record.nodes.size() == 3);
  CHECK(record.nodes[0].op_type == "GroupNormalization");
  CHECK(record.nodes[1].adapter == "Split-18: num_outputs -> even parts, one per output");
  CHECK(record.nodes[2].adapter == "Pad-18: pads of listed axes -> pads of every axis");

  Graph graph = test::GraphFromText(kChain);  // the whole loader: every value's shape known
  CHECK(ShapeOf(graph, "r") == "[1,8,12,12]");
  CHECK(ShapeOf(graph, "p") == "[1,4,12,12]");
  CHECK(ShapeOf(graph, "a") == "[1,4,12,12]");
  CHECK(ShapeOf(graph, "y") == "[1,4,15,15]");
}

TEST_CASE("an uneven Split-18 after a Resize-18 gets its axis's length inferred", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,8,12,12] x) => (float[1,8,8,12] p, float[1,8,7,12] y) <float[4] scales = {1, 1, 1.25, 1}> {
      r = Resize <mode = "nearest", antialias = 0> (x, , scales)
      p, q = Split <axis = -2, num_outputs = 2> (r)
      y = Relu (q)
    })");
  auto record = Down(model);
  const auto& split = First(model.graph(), "Split");
  REQUIRE(split.input_size() == 2);
  CHECK(InitializerInts(model.graph(), split.input(1)) == std::vector<std::int64_t>{8, 7});
  REQUIRE(record.nodes.size() == 2);
  CHECK(record.nodes[1].adapter == "Split-18: num_outputs -> split input (uneven parts)");
}

TEST_CASE("Pad-18, ReduceMean-18 without keepdims, Pad-18: the second Pad gets the reduced rank", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,8,12,12] x) => (float[1,8,13] y)
      <int64[2] pads = {1, 1}, int64[1] axes = {-1}, int64[1] reduce = {-1}, int64[2] pads2 = {1, 0}> {
      r = Relu (x)
      p = Pad (r, pads, , axes)
      m = ReduceMean <keepdims = 0> (p, reduce)
      y = Pad (m, pads2, , axes)
    })");
  auto record = Down(model);
  const auto& g = model.graph();
  CHECK(OpTypes(g.node()) == Names{"Relu", "Pad", "ReduceMean", "Pad"});
  CHECK(InitializerInts(g, g.node(1).input(1)) == std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(Ints(g.node(2), "axes") == std::vector<std::int64_t>{-1});
  CHECK(InitializerInts(g, g.node(3).input(1)) == std::vector<std::int64_t>{0, 0, 1, 0, 0, 0});
  CHECK(record.nodes.size() == 3);
}

TEST_CASE("a shape only data propagation from before an earlier inference gives is inferred again whole",
          "[down_conversion]") {
  // The first Split has [Shape, Relu] inferred; for the second only the nodes
  // since then are, where Reshape's shape input is a typed input without its
  // values: its dims come out unknown, and the whole prefix is inferred.
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,8,10,12] x) => (float[1,4,10,12] p, float[1,8,1,12] d) {
      s = Shape (x)
      e = Relu (x)
      p, q = Split <axis = 1, num_outputs = 2> (e)
      r = Reshape (e, s)
      a, b, c, d = Split <axis = 2, num_outputs = 4> (r)
    })");
  Down(model);
  const auto& g = model.graph();
  REQUIRE(g.node(4).op_type() == "Split");
  REQUIRE(g.node(4).input_size() == 2);
  CHECK(InitializerInts(g, g.node(4).input(1)) == std::vector<std::int64_t>{3, 3, 3, 1});
}

TEST_CASE("an If between two Pads: its bodies' reads of outer values are typed for inference", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x, bool c) => (float[2,7] y) <int64[2] pads = {1, 1}, int64[1] axes = {-1}> {
      u = Relu (x)
      p = Pad (u, pads, , axes)
      t = If (c) <then_branch = g1 () => (float[2,5] o) { k = Identity (u)
                                                            o = Relu (p) },
                  else_branch = g2 () => (float[2,5] o2) { o2 = Neg (p) }>
      y = Pad (t, pads, , axes)
    })");
  Down(model);
  const auto& g = model.graph();
  REQUIRE(g.node(3).op_type() == "Pad");
  CHECK(InitializerInts(g, g.node(3).input(1)) == std::vector<std::int64_t>{0, 1, 0, 1});
}

TEST_CASE("a rank that depends on run-time values is refused, naming the value", "[down_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,8,12,12] x, int64[K] shape) => (float y) <int64[2] pads = {1, 1}, int64[1] axes = {-1}> {
      r = Reshape (x, shape)
      y = Pad (r, pads, , axes)
    })");
  auto e = test::ErrorOf([&] { Down(model); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::EndsWith("(Pad, opset 18): the shape of 'r' is neither declared nor inferable, and the "
                                        "rewrite needs it"));
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
