// The functions of fused groups (write/function_builder.h): names, families
// of one structure, varying attributes as function attributes, and the groups
// left to their members.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "write/function_builder.h"
#include "test_models.h"

using namespace onnxfuse;
using detail::BuildFunctions;
using detail::FusedOpName;
using Strings = std::vector<std::string>;

namespace {

Strings Names(const google::protobuf::RepeatedPtrField<std::string>& names) { return {names.begin(), names.end()}; }

const onnx::AttributeProto* AttributeNamed(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Two Conv+Relu blocks; the second Conv's strides and the output size are parameters.
std::string TwoBlocks(const std::string& strides2, const std::string& out_hw) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,8,8] x, float[2,2,3,3] w1, float[2,2,3,3] w2) => (float[1,2,)" + out_hw + R"(] y) {
      c1 = Conv <pads = [1,1,1,1], strides = [1,1]> (x, w1)
      r1 = Relu (c1)
      c2 = Conv <pads = [1,1,1,1], strides = )" + strides2 + R"(> (r1, w2)
      y = Relu (c2)
    })";
}

std::vector<std::int64_t> Ints(const onnx::AttributeProto& a) { return {a.ints().begin(), a.ints().end()}; }

}  // namespace

TEST_CASE("groups differing in an attribute share a function with that attribute", "[function_builder]") {
  auto graph = test::GraphFromText(TwoBlocks("[2,2]", "4,4"));
  auto set = BuildFunctions(graph, test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}, {"Conv_2", "Relu_3"}}), {});
  REQUIRE(set.functions.size() == 1);
  const auto& f = set.functions[0];
  CHECK(f.name() == "Conv_Relu");
  CHECK(f.domain() == "ai.onnxfuse");
  CHECK(Names(f.attribute()) == Strings{"Conv_0_strides"});
  const auto* reference = AttributeNamed(f.node(0), "strides");
  REQUIRE(reference != nullptr);
  CHECK(reference->ref_attr_name() == "Conv_0_strides");
  CHECK(reference->type() == onnx::AttributeProto::INTS);
  CHECK(reference->ints_size() == 0);
  REQUIRE(AttributeNamed(f.node(0), "pads") != nullptr);
  CHECK(AttributeNamed(f.node(0), "pads")->ref_attr_name().empty());  // equal in both: a literal
  CHECK(Ints(*AttributeNamed(f.node(0), "pads")) == std::vector<std::int64_t>{1, 1, 1, 1});
  CHECK_THAT(f.doc_string(), Catch::Contains("2 group(s)") && Catch::Contains("Conv_0, Relu_1"));

  REQUIRE(set.calls.size() == 2);  // one per group
  for (int g = 0; g < 2; ++g) {
    const auto& call = set.calls[static_cast<std::size_t>(g)];
    CHECK(call.function == "Conv_Relu");
    REQUIRE(call.attributes.size() == 1);
    CHECK(call.attributes[0].name() == "Conv_0_strides");
    CHECK(Ints(call.attributes[0]) == std::vector<std::int64_t>(2, g == 0 ? 1 : 2));
  }
}

TEST_CASE("identical groups share one function with literal attributes and positional names",
          "[function_builder]") {
  auto graph = test::GraphFromText(TwoBlocks("[1,1]", "8,8"));
  auto set = BuildFunctions(graph, test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}, {"Conv_2", "Relu_3"}}), {});
  REQUIRE(set.functions.size() == 1);
  const auto& f = set.functions[0];
  CHECK(f.attribute_size() == 0);
  CHECK(Names(f.input()) == Strings{"x0", "x1"});
  CHECK(Names(f.output()) == Strings{"y0"});
  REQUIRE(f.node_size() == 2);
  CHECK(f.node(0).name() == "Conv_0");
  CHECK(f.node(1).name() == "Relu_1");
  CHECK(Names(f.node(0).output()) == Strings{"t0"});
  CHECK(Names(f.node(1).input()) == Strings{"t0"});
  // Attributes sorted by name, so equal nodes compare equal.
  CHECK(f.node(0).attribute(0).name() == "pads");
  CHECK(f.node(0).attribute(1).name() == "strides");
  REQUIRE(f.opset_import_size() == 1);
  CHECK(f.opset_import(0).domain().empty());
  CHECK(f.opset_import(0).version() == 13);
  CHECK(set.calls[0].attributes.empty());
  CHECK(set.calls[1].function == "Conv_Relu");
}

TEST_CASE("groups with different wiring get distinct functions", "[function_builder]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,3] a, float[2,3] b) => (float[2,3] y) {
      r1 = Relu (a)
      s1 = Add (r1, b)
      r2 = Relu (s1)
      y = Add (b, r2)
    })");
  auto set = BuildFunctions(graph, test::PlanGrouping(graph, {{"Relu_0", "Add_1"}, {"Relu_2", "Add_3"}}), {});
  REQUIRE(set.functions.size() == 2);
  CHECK(set.functions[0].name() == "Relu_Add");
  CHECK(set.functions[1].name() == "Relu_Add_2");
  CHECK(set.calls[0].function == "Relu_Add");
  CHECK(set.calls[1].function == "Relu_Add_2");
  CHECK(Names(set.functions[0].node(1).input()) == Strings{"t0", "x1"});
  CHECK(Names(set.functions[1].node(1).input()) == Strings{"x1", "t0"});
}

TEST_CASE("long groups get an abbreviated name, taken names a suffix", "[function_builder]") {
  auto graph =
      test::GraphFromText(test::ChainText({"Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Relu"}, "4", 15));
  auto seven = test::PlanGrouping(graph, {{"Relu_0", "Sigmoid_1", "Tanh_2", "Neg_3", "Abs_4", "Exp_5", "Relu_6"}});
  CHECK(FusedOpName(graph, seven.groups[0]) == "Relu_Sigmoid_Tanh_x7");
  auto set = BuildFunctions(graph, seven, {});
  REQUIRE(set.functions.size() == 1);
  CHECK(set.functions[0].node_size() == 7);
  CHECK(set.calls[0].function == "Relu_Sigmoid_Tanh_x7");

  // Six members are still spelled out.
  auto six = test::PlanGrouping(graph, {{"Relu_0", "Sigmoid_1", "Tanh_2", "Neg_3", "Abs_4", "Exp_5"}});
  CHECK(FusedOpName(graph, six.groups[0]) == "Relu_Sigmoid_Tanh_Neg_Abs_Exp");

  auto renamed = BuildFunctions(graph, seven, {"Relu_Sigmoid_Tanh_x7", "Relu_Sigmoid_Tanh_x7_2"});
  CHECK(renamed.calls[0].function == "Relu_Sigmoid_Tanh_x7_3");
}

TEST_CASE("single nodes, subgraph holders and pattern calls get no generated function", "[function_builder]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (bool c, float[4] a) => (float[4] y, float[4] z) {
      r = Relu (a)
      y = If (c) <then_branch = g1 () => (float[4] o1) { o1 = Neg (r) },
                  else_branch = g2 () => (float[4] o2) { o2 = Abs (r) }>
      n = Neg (a)
      z = Abs (n)
    })");
  auto plan = test::PlanGrouping(graph, {{"Relu_0", "If_1"}, {"Neg_2", "Abs_3"}});
  SECTION("a group holding an If is left to its members") {
    auto set = BuildFunctions(graph, plan, {});
    REQUIRE(set.functions.size() == 1);
    CHECK(set.calls[0].function.empty());
    CHECK(set.calls[1].function == "Neg_Abs");
  }
  SECTION("a group a pattern called is defined by the pattern") {
    plan.groups[1].call = PatternCall{"SomePattern", {}, {}, {}};
    auto set = BuildFunctions(graph, plan, {});
    CHECK(set.functions.empty());
    for (const auto& call : set.calls) CHECK(call.function.empty());
  }
}

TEST_CASE("a body node of another domain imports the model's version of it", "[function_builder]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 15, "com.example" : 3]>
    g (float[4] a) => (float[4] y) {
      b = Relu (a)
      y = Custom (b)
    })");
  model.mutable_graph()->mutable_node(1)->set_domain("com.example");
  Graph graph(model, "custom.onnx");  // the loader's checker does not know com.example
  auto set = BuildFunctions(graph, test::PlanGrouping(graph, {{"Relu_0", "Custom_1"}}), {});
  REQUIRE(set.functions.size() == 1);
  std::map<std::string, std::int64_t> opsets;
  for (const auto& o : set.functions[0].opset_import()) opsets[o.domain()] = o.version();
  CHECK(opsets == std::map<std::string, std::int64_t>{{"", 15}, {"com.example", 3}});
  CHECK(set.functions[0].node(1).domain() == "com.example");
}
