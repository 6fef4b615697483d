// The rule of ai.onnxfuse calls (ir/fused_domain.h): a call names a function
// of the model and sets only what it declares, with the body's types.
#include <catch2/catch.hpp>

#include <onnx/defs/parser.h>

#include "ir/fused_domain.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// y = Scale<alpha>(x): a function whose body reads attribute `alpha` as a float.
onnx::ModelProto ModelWithCall() {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 13, "ai.onnxfuse" : 1]>
    g (float[2] x) => (float[2] y) { y = Scale (x) })");
  auto* call = model.mutable_graph()->mutable_node(0);
  call->set_domain(kFusedDomain);
  call->set_name("fused_0");
  auto* alpha = call->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(2.0f);
  onnx::FunctionProto f;
  const auto status = onnx::OnnxParser::Parse(f, R"(
    <domain: "ai.onnxfuse", opset_import: ["" : 13]>
    Scale <alpha> (x0) => (y0) { y0 = LeakyRelu <alpha: float = @alpha> (x0) })");
  REQUIRE(status.IsOK());
  *model.add_functions() = f;
  return model;
}

}  // namespace

TEST_CASE("a call of a declared function with a declared attribute passes", "[fused_domain]") {
  auto model = ModelWithCall();
  CHECK_NOTHROW(CheckFunctionCalls(model, ErrorKind::kInvalidModel, "in.onnx: "));
  model.mutable_graph()->mutable_node(0)->clear_attribute();  // unset: the body takes the op's default
  CHECK_NOTHROW(CheckFunctionCalls(model, ErrorKind::kInvalidModel, "in.onnx: "));
}

TEST_CASE("calls that break the rule are refused with the caller's kind and prefix", "[fused_domain]") {
  auto model = ModelWithCall();
  SECTION("no function of that name") {
    model.mutable_graph()->mutable_node(0)->set_op_type("Missing");
    auto e = test::ErrorOf([&] { CheckFunctionCalls(model, ErrorKind::kInvalidModel, "in.onnx: "); });
    CHECK(e.kind == ErrorKind::kInvalidModel);
    CHECK(e.message == "in.onnx: fused node 'fused_0' (Missing) calls no function of the model");
  }
  SECTION("an undeclared attribute") {
    model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_name("beta");
    auto e = test::ErrorOf([&] { CheckFunctionCalls(model, ErrorKind::kInternal, "out: "); });
    CHECK(e.kind == ErrorKind::kInternal);
    CHECK(e.message == "out: fused node 'fused_0' (Scale) sets undeclared attribute 'beta'");
  }
  SECTION("an attribute of another type than the body reads") {
    auto* alpha = model.mutable_graph()->mutable_node(0)->mutable_attribute(0);
    alpha->set_type(onnx::AttributeProto::INT);
    alpha->set_i(2);
    auto e = test::ErrorOf([&] { CheckFunctionCalls(model, ErrorKind::kInvalidModel, ""); });
    CHECK(e.message == "fused node 'fused_0' (Scale) sets attribute 'alpha' with the wrong type");
  }
  SECTION("a body referring to an attribute the function does not declare") {
    model.mutable_functions(0)->clear_attribute();
    auto e = test::ErrorOf([&] { CheckFunctionCalls(model, ErrorKind::kInvalidModel, ""); });
    CHECK(e.message == "function Scale references undeclared attribute 'alpha'");
  }
}

TEST_CASE("functions and nodes of other domains are not checked", "[fused_domain]") {
  auto model = ModelWithCall();
  model.mutable_functions(0)->set_domain("com.example");
  model.mutable_graph()->mutable_node(0)->set_domain("com.example");
  CHECK_NOTHROW(CheckFunctionCalls(model, ErrorKind::kInvalidModel, ""));
  // A fused call whose function lives in another domain finds none.
  model.mutable_graph()->mutable_node(0)->set_domain(kFusedDomain);
  CHECK(test::ErrorOf([&] { CheckFunctionCalls(model, ErrorKind::kInvalidModel, ""); }).kind ==
        ErrorKind::kInvalidModel);
}
