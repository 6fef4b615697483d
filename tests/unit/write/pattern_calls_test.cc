// The functions and call nodes of pattern groups (write/pattern_calls.h): the
// pattern's function at the model's opset, variants without omitted inputs,
// reuse of an identical function, and the call node.
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"
#include "patterns/pattern.h"
#include "write/pattern_calls.h"
#include "test_models.h"

using namespace onnxfuse;
using detail::BuildPatternCalls;
using detail::PatternCallNode;
using Names = std::vector<std::string>;

namespace {

const char* kConvRelu = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,4,4] x, float[2,2,1,1] w, float[2] b) => (float[1,2,4,4] y, float[1,2,4,4] z) {
    c = Conv <strides = [1, 1]> (x, w, b)
    y = Relu (c)
    d = Conv (y, w)
    z = Relu (d)
  })";

onnx::FunctionProto ConvReluPattern() {
  return ParsePatterns(R"(<domain: "ai.onnxfuse", opset_import: ["" : 13]>
ConvRelu <strides> (X, W, B) => (Y) {
  c = Conv <strides = @strides> (X, W, B)
  Y = Relu (c)
}
)", "inline.onnxtxt")[0].function;
}

// The graph's two Conv+Relu pairs as calls of ConvRelu; the second without a bias.
FusionPlan PatternPlan(const Graph& graph) {
  auto plan = test::PlanGrouping(graph, {{"Conv_0", "Relu_1"}, {"Conv_2", "Relu_3"}});
  plan.functions.push_back(ConvReluPattern());
  auto v = [&](const std::string& name) { return *graph.FindValue(name); };
  onnx::AttributeProto strides;
  strides.set_name("strides");
  strides.set_type(onnx::AttributeProto::INTS);
  strides.add_ints(1);
  strides.add_ints(1);
  plan.groups[0].call = PatternCall{"ConvRelu", {v("x"), v("w"), v("b")}, {v("y")}, {strides}};
  plan.groups[1].call = PatternCall{"ConvRelu", {v("y"), v("w"), kNoValue}, {v("z")}, {}};
  return plan;
}

}  // namespace

TEST_CASE("pattern functions at the model's opset, a variant per omitted input set", "[pattern_calls]") {
  Graph graph = test::GraphFromText(kConvRelu);
  auto calls = BuildPatternCalls(graph, PatternPlan(graph));
  CHECK(calls.function_of_group == Names{"ConvRelu", "ConvRelu_no_B"});
  REQUIRE(calls.functions.size() == 2);
  const auto& full = calls.functions[0];
  CHECK(full.name() == "ConvRelu");
  REQUIRE(full.opset_import_size() == 1);
  CHECK(full.opset_import(0).domain().empty());
  CHECK(full.opset_import(0).version() == 15);  // the pattern's 13 becomes the model's 15
  const auto& variant = calls.functions[1];
  CHECK(variant.name() == "ConvRelu_no_B");
  CHECK(Names(variant.input().begin(), variant.input().end()) == Names{"X", "W"});
  CHECK(Names(variant.node(0).input().begin(), variant.node(0).input().end()) == Names{"X", "W", ""});
  CHECK(variant.opset_import(0).version() == 15);
}

TEST_CASE("the call node: present inputs, captured attributes, members in doc_string", "[pattern_calls]") {
  Graph graph = test::GraphFromText(kConvRelu);
  auto plan = PatternPlan(graph);
  plan.groups[1].rule = "pattern.ConvRelu";
  auto first = PatternCallNode(graph, plan.groups[0], "ConvRelu", "fused_0_Conv_0");
  CHECK(first.domain() == "ai.onnxfuse");
  CHECK(first.op_type() == "ConvRelu");
  CHECK(first.name() == "fused_0_Conv_0");
  CHECK(Names(first.input().begin(), first.input().end()) == Names{"x", "w", "b"});
  CHECK(Names(first.output().begin(), first.output().end()) == Names{"y"});
  REQUIRE(first.attribute_size() == 1);
  CHECK(first.attribute(0).name() == "strides");
  auto second = PatternCallNode(graph, plan.groups[1], "ConvRelu_no_B", "fused_1_Conv_2");
  CHECK(Names(second.input().begin(), second.input().end()) == Names{"y", "w"});
  CHECK(second.attribute_size() == 0);
  CHECK(second.doc_string() == "onnx-fuse group 1 (pattern.ConvRelu): Conv_2, Relu_3");
}

TEST_CASE("a function the model already has is reused when identical, refused when not", "[pattern_calls]") {
  Graph fresh = test::GraphFromText(kConvRelu);
  auto written = BuildPatternCalls(fresh, PatternPlan(fresh));

  auto model = test::ParseModel(kConvRelu);
  *model.add_functions() = written.functions[0];  // a model fused before
  Graph again = LoadModelProto(model, "fused.onnx");
  auto calls = BuildPatternCalls(again, PatternPlan(again));
  CHECK(calls.function_of_group == Names{"ConvRelu", "ConvRelu_no_B"});
  REQUIRE(calls.functions.size() == 1);  // only the variant is new
  CHECK(calls.functions[0].name() == "ConvRelu_no_B");

  auto clash = test::ParseModel(kConvRelu);
  auto different = written.functions[0];
  different.mutable_node(1)->set_op_type("Sigmoid");
  *clash.add_functions() = different;
  Graph other = LoadModelProto(clash, "other.onnx");
  auto e = test::ErrorOf([&] { BuildPatternCalls(other, PatternPlan(other)); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "other.onnx: the model already defines a different function ai.onnxfuse.ConvRelu");
}

TEST_CASE("a call of a pattern the plan does not define is an internal error", "[pattern_calls]") {
  Graph graph = test::GraphFromText(kConvRelu);
  auto plan = PatternPlan(graph);
  plan.functions.clear();
  auto e = test::ErrorOf([&] { BuildPatternCalls(graph, plan); });
  CHECK(e.kind == ErrorKind::kInternal);
  CHECK(e.message == "internal error: plan.functions defines pattern ConvRelu");
  plan = PatternPlan(graph);
  plan.groups[0].call->inputs.pop_back();
  CHECK(test::ErrorOf([&] { BuildPatternCalls(graph, plan); }).message ==
        "internal error: a call of ConvRelu binds every function input");
}
