// Element types opset 17 lacks (RefuseNewElementTypes, src/load/new_element_types.cc).
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"
#include "load/opset_conversion.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

std::string Refusal(const onnx::ModelProto& model) {
  auto e = test::ErrorOf([&] { RefuseNewElementTypes(model, "new.onnx"); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  return e.message;
}

}  // namespace

TEST_CASE("models of the working range are not inspected", "[new_element_types]") {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bfloat16[2] x) => (bfloat16[2] y) { y = Relu (x) })");
  CHECK_NOTHROW(RefuseNewElementTypes(model, "m.onnx"));
}

TEST_CASE("inputs, outputs, values and initializers of a new type are refused by name", "[new_element_types]") {
  auto model = test::ParseModel(R"(
    <ir_version: 9, opset_import: ["" : 19]>
    g (float[2] x) => (float[2] y) { y = Relu (x) })");
  CHECK_NOTHROW(RefuseNewElementTypes(model, "new.onnx"));

  auto bf16 = model;
  bf16.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(16);
  CHECK(Refusal(bf16) == "new.onnx: graph input 'x' is a bfloat16 tensor, which opset 17 has no type for");
  auto f8 = model;
  f8.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(18);
  CHECK(Refusal(f8) == "new.onnx: graph output 'y' is a float8 tensor, which opset 17 has no type for");
  auto u4 = model;
  auto* vi = u4.mutable_graph()->add_value_info();
  vi->set_name("v");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(21);
  CHECK(Refusal(u4) == "new.onnx: value 'v' is a uint4 tensor, which opset 17 has no type for");
  auto i4 = model;
  auto* t = i4.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(22);
  CHECK(Refusal(i4) == "new.onnx: initializer 'w' is a int4 tensor, which opset 17 has no type for");
  auto f4 = model;
  f4.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(23);
  CHECK_THAT(Refusal(f4), Catch::Contains("is a element type 23 tensor"));
}

TEST_CASE("casts to a new type and tensors in attributes and subgraphs are refused", "[new_element_types]") {
  auto cast = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (float[2] x) => (float[2] y) { c = Cast <to = 17> (x)  y = Cast <to = 1> (c) })");
  cast.mutable_graph()->mutable_node(0)->set_name("c0");
  CHECK(Refusal(cast) == "new.onnx: node 'c0' (Cast) casts to float8, which opset 17 has no type for");

  auto nested = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (bool b) => (float[1] y) {
      y = If (b) <then_branch = t () => (float[1] o) { o = Constant <value = float[1] {1}> () },
                  else_branch = e () => (float[1] p) { p = Constant <value = float[1] {2}> () }>
    })");
  auto* value = nested.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0)
                    ->mutable_attribute(0);
  value->mutable_t()->set_data_type(16);
  nested.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_name("k");
  CHECK(Refusal(nested) == "new.onnx: node 'k' (Constant) attribute 'value' is a bfloat16 tensor, which opset 17 has "
                           "no type for");
}
