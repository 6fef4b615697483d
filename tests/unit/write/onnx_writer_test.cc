#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>

#include "onnxfuse/error.h"
#include "write/onnx_writer.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> OpTypes(const onnx::GraphProto& graph) {
  std::vector<std::string> types;
  for (const auto& n : graph.node()) types.push_back(n.op_type());
  return types;
}

std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<std::string>& names) {
  return {names.begin(), names.end()};
}

const onnx::AttributeProto* AttributeNamed(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::map<std::string, std::int64_t> Opsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& o) {
  std::map<std::string, std::int64_t> result;
  for (const auto& opset : o) result[opset.domain()] = opset.version();
  return result;
}

// Two Conv+Relu blocks; the second Conv's strides are a parameter of the text.
std::string TwoConvRelu(const std::string& strides2, const std::string& out_hw) {
  return R"(
    <ir_version: 7, opset_import: ["" : 13], producer_name: "unit", producer_version: "0.1",
     model_version: 3, doc_string: "two blocks", metadata_props: ["origin" : "test"]>
    blocks (float[1,3,8,8] x, float[4,4,3,3] w2) => (float[1,4,)" + out_hw + R"(] y)
      <float[4,3,3,3] w1 = {1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
         1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
         1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
         1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9},
       float[4] b = {0.5, -0.5, 1, -1}> {
      c1 = Conv <pads = [1,1,1,1], strides = [1,1]> (x, w1, b)
      r1 = Relu (c1)
      c2 = Conv <pads = [1,1,1,1], strides = )" + strides2 + R"(> (r1, w2, b)
      y = Relu (c2)
    })";
}

}  // namespace

TEST_CASE("two identical Conv+Relu groups share one function", "[onnx_writer]") {
  auto graph = test::GraphFromText(TwoConvRelu("[1,1]", "8,8"));
  auto plan = test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}, {"Conv_2", "Relu_3"}});
  auto fused = BuildFusedModel(graph, plan);
  const auto& model = fused.model;

  // The graph: two call nodes in the fused domain, original value names outside.
  REQUIRE(OpTypes(model.graph()) == std::vector<std::string>{"Conv_Relu", "Conv_Relu"});
  const auto& call0 = model.graph().node(0);
  const auto& call1 = model.graph().node(1);
  CHECK(call0.domain() == "ai.onnxfuse");
  CHECK(call0.name() == "fused_0_Conv_0");
  CHECK(call1.name() == "fused_1_Conv_2");
  CHECK(Names(call0.input()) == std::vector<std::string>{"x", "w1", "b"});
  CHECK(Names(call0.output()) == std::vector<std::string>{"r1"});
  CHECK(Names(call1.input()) == std::vector<std::string>{"r1", "w2", "b"});
  CHECK(Names(call1.output()) == std::vector<std::string>{"y"});
  CHECK(call0.attribute_size() == 0);
  CHECK(fused.function_of_group == std::vector<std::string>{"Conv_Relu", "Conv_Relu"});

  // One function; canonical names in the body; literal attributes.
  REQUIRE(model.functions_size() == 1);
  const auto& f = model.functions(0);
  CHECK(f.name() == "Conv_Relu");
  CHECK(f.domain() == "ai.onnxfuse");
  CHECK(Names(f.input()) == std::vector<std::string>{"x0", "x1", "x2"});
  CHECK(Names(f.output()) == std::vector<std::string>{"y0"});
  CHECK(f.attribute_size() == 0);
  REQUIRE(f.node_size() == 2);
  CHECK(f.node(0).name() == "Conv_0");
  CHECK(Names(f.node(0).input()) == std::vector<std::string>{"x0", "x1", "x2"});
  CHECK(Names(f.node(0).output()) == std::vector<std::string>{"t0"});
  CHECK(Names(f.node(1).input()) == std::vector<std::string>{"t0"});
  CHECK(Names(f.node(1).output()) == std::vector<std::string>{"y0"});
  REQUIRE(AttributeNamed(f.node(0), "strides") != nullptr);
  CHECK(AttributeNamed(f.node(0), "strides")->ref_attr_name().empty());
  CHECK(Opsets(f.opset_import()) == std::map<std::string, std::int64_t>{{"", 13}});

  // Model-level facts kept; IR version raised to 8; the fused domain imported.
  CHECK(model.ir_version() == 8);
  CHECK(Opsets(model.opset_import()) == std::map<std::string, std::int64_t>{{"", 13}, {"ai.onnxfuse", 1}});
  CHECK(model.producer_name() == "unit");
  CHECK(model.producer_version() == "0.1");
  CHECK(model.model_version() == 3);
  CHECK(model.doc_string() == "two blocks");
  REQUIRE(model.metadata_props_size() == 1);
  CHECK(model.metadata_props(0).key() == "origin");
  CHECK(model.graph().name() == "blocks");
  CHECK(model.graph().initializer_size() == 2);
  CHECK(model.graph().initializer(0).SerializeAsString() == graph.model().graph().initializer(0).SerializeAsString());
  CHECK(model.graph().input_size() == graph.model().graph().input_size());
  REQUIRE(model.graph().output_size() == 1);
  CHECK(model.graph().output(0).SerializeAsString() == graph.model().graph().output(0).SerializeAsString());
  // value_info: r1 still flows between the calls; c1 and c2 live inside functions now.
  std::vector<std::string> infos;
  for (const auto& vi : model.graph().value_info()) infos.push_back(vi.name());
  CHECK(infos == std::vector<std::string>{"r1"});

  CHECK_NOTHROW(CheckFusedModel(model));
}

TEST_CASE("a group whose first member comes early still follows its producers", "[onnx_writer]") {
  // {Relu_0, Add_2} is convex (no path leaves and re-enters it) but reads
  // Sigmoid_1, which is a later group by first member.
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[4] a, float[4] b) => (float[4] y) {
      r = Relu (a)
      s = Sigmoid (b)
      y = Add (r, s)
    })");
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {{"Relu_0", "Add_2"}}));
  CHECK(OpTypes(fused.model.graph()) == std::vector<std::string>{"Sigmoid", "Relu_Add"});
  CHECK(fused.function_of_group == std::vector<std::string>{"Relu_Add", ""});
  CHECK_NOTHROW(CheckFusedModel(fused.model));
}

TEST_CASE("single nodes are copied unchanged, inner graph outputs stay outputs", "[onnx_writer]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] a) => (float[2,3] r, float[2,3] y) {
      r = Relu (a)
      s = Sigmoid (r)
      t = Tanh (s)
      y = Transpose <perm = [0,1]> (t)
    })");
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {{"Relu_0", "Sigmoid_1", "Tanh_2"}}));
  const auto& g = fused.model.graph();
  REQUIRE(OpTypes(g) == std::vector<std::string>{"Relu_Sigmoid_Tanh", "Transpose"});
  CHECK(Names(g.node(0).output()) == std::vector<std::string>{"r", "t"});  // r is a graph output
  CHECK(g.node(1).SerializeAsString() == graph.node(3).proto.SerializeAsString());
  const auto& f = fused.model.functions(0);
  CHECK(Names(f.output()) == std::vector<std::string>{"y0", "y1"});
  CHECK(Names(f.node(1).input()) == std::vector<std::string>{"y0"});  // read inside and outside
  CHECK(Names(f.node(2).output()) == std::vector<std::string>{"y1"});
  CHECK(Opsets(fused.model.opset_import()).at("") == 17);
  CHECK(Opsets(f.opset_import()).at("") == 17);
  CHECK_NOTHROW(CheckFusedModel(fused.model));
}

TEST_CASE("a plan without fused groups only raises the IR version", "[onnx_writer]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Neg"}, "4", 11, 6));
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {}));
  CHECK(fused.model.ir_version() == 8);
  CHECK(fused.model.functions_size() == 0);
  CHECK(Opsets(fused.model.opset_import()) == std::map<std::string, std::int64_t>{{"", 11}});
  CHECK(fused.model.graph().SerializeAsString() == graph.model().graph().SerializeAsString());
  CHECK_NOTHROW(CheckFusedModel(fused.model));
}

TEST_CASE("groups holding subgraph nodes are written unfused", "[onnx_writer]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (bool c, float[4] a) => (float[4] y) {
      r = Relu (a)
      y = If (c) <then_branch = g1 () => (float[4] o1) { o1 = Neg (r) },
                  else_branch = g2 () => (float[4] o2) { o2 = Abs (r) }>
    })");
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {{"Relu_0", "If_1"}}));
  CHECK(OpTypes(fused.model.graph()) == std::vector<std::string>{"Relu", "If"});
  CHECK(fused.function_of_group == std::vector<std::string>{""});
  CHECK(fused.model.functions_size() == 0);
  CHECK_NOTHROW(CheckFusedModel(fused.model));
}

TEST_CASE("an invalid plan is an internal error", "[onnx_writer]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[4] a) => (float[4] y) {
      b = Relu (a)
      c = Sigmoid (b)
      y = Add (b, c)
    })");
  // {Relu_0, Add_2} is not convex: Relu -> Sigmoid -> Add leaves and re-enters it.
  auto plan = test::PlanGrouping(graph, {{"Relu_0", "Add_2"}});
  CHECK(test::ErrorOf([&] { BuildFusedModel(graph, plan); }).kind == ErrorKind::kInternal);
}

TEST_CASE("the checker sees through functions", "[onnx_writer]") {
  auto graph = test::GraphFromText(TwoConvRelu("[2,2]", "4,4"));
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}, {"Conv_2", "Relu_3"}}));
  // A declared output shape that disagrees with the body (strides 2 halve 8x8)
  // is caught: strict inference enters the function and binds ref_attr_name.
  auto wrong = fused.model;
  wrong.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)
      ->set_dim_value(8);
  CHECK_THROWS_AS(CheckFusedModel(wrong), Error);
  // libonnx does not compare calls with functions; CheckFusedModel does. A call may
  // omit a declared attribute (the body node then lacks it), but not set an undeclared one.
  auto missing = fused.model;
  missing.mutable_graph()->mutable_node(0)->clear_attribute();
  CHECK_NOTHROW(CheckFusedModel(missing));
  auto extra = fused.model;
  auto* bogus = extra.mutable_graph()->mutable_node(0)->add_attribute();
  bogus->set_name("bogus");
  bogus->set_type(onnx::AttributeProto::INT);
  bogus->set_i(1);
  CHECK_THROWS_WITH(CheckFusedModel(extra), Catch::Contains("sets undeclared attribute 'bogus'"));
  auto unknown = fused.model;
  unknown.mutable_graph()->mutable_node(0)->set_op_type("NoSuchFunction");
  CHECK_THROWS_WITH(CheckFusedModel(unknown), Catch::Contains("calls no function"));
  // A function whose default-domain opset differs from the model's.
  auto opset = fused.model;
  opset.mutable_functions(0)->mutable_opset_import(0)->set_version(12);
  try {
    CheckFusedModel(opset);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInternal);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("a fused model round-trips through a file and can be fused again", "[onnx_writer]") {
  const fs::path dir = fs::temp_directory_path() / ("onnxfuse_writer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "fused.onnx").string();

  auto graph = test::GraphFromText(TwoConvRelu("[1,1]", "8,8"));
  auto fused = BuildFusedModel(graph, test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}}));
  SaveModelAtomically(fused.model, path);
  auto loaded = LoadModel(path);
  CHECK(loaded.num_nodes() == 3);
  CHECK(loaded.model().functions_size() == 1);
  CHECK(loaded.model().ir_version() == 8);
  CHECK(loaded.value(*loaded.FindValue("y")).type.ShapeString() == "[1,4,8,8]");

  // A second run fuses the rest; its new Conv_Relu must not clash with the first.
  auto again = BuildFusedModel(loaded, test::PlanGrouping(loaded, {{"Conv_1", "Relu_2"}}));
  CHECK(again.function_of_group == std::vector<std::string>{"", "Conv_Relu_2"});
  CHECK(again.model.functions_size() == 2);
  CHECK(Opsets(again.model.opset_import()).at("ai.onnxfuse") == 1);
  CHECK(again.model.opset_import_size() == 2);
  CHECK_NOTHROW(CheckFusedModel(again.model));
  fs::remove_all(dir);
}
