// The adapters' shared helpers (src/load/down_helpers.cc): messages, constant
// ints, attribute edits and the nodes and tensors they build.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using test::AdapterScope;
using test::NodeFromText;

TEST_CASE("Refuse and MissingDims name the source, node, op and opset", "[down_helpers]") {
  AdapterScope scope(21);
  auto node = NodeFromText("y = Pad (x, p)", "pad0");
  auto e = test::ErrorOf([&] { scope.ctx.Refuse(node, "because"); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'pad0' (Pad, opset 21): because");
  e = test::ErrorOf([&] { scope.ctx.MissingDims(node, "x"); });
  CHECK(e.message ==
        "new.onnx: node 'pad0' (Pad, opset 21): the shape of 'x' is neither declared nor inferable, and the rewrite needs it");
  scope.ctx.inference_failure = "why";
  e = test::ErrorOf([&] { scope.ctx.MissingDims(node, "x"); });
  CHECK_THAT(e.message, Catch::EndsWith("the rewrite needs it (shape inference of the nodes before it: why)"));
}

TEST_CASE("Ints reads int64 and int32 constants, nothing else", "[down_helpers]") {
  AdapterScope scope(18);
  scope.Ints("a", {4, -1});
  onnx::TensorProto i32;
  i32.set_data_type(onnx::TensorProto::INT32);
  i32.add_dims(2);
  i32.add_int32_data(7);
  i32.add_int32_data(-8);
  scope.constants["b"] = i32;
  scope.constants["f"] = load::FloatScalar("f", 1.0f);
  CHECK(scope.ctx.Ints("a") == std::vector<std::int64_t>{4, -1});
  CHECK(scope.ctx.Ints("b") == std::vector<std::int64_t>{7, -8});
  CHECK_FALSE(scope.ctx.Ints("f"));
  CHECK_FALSE(scope.ctx.Ints("unknown"));
  CHECK_FALSE(scope.ctx.Ints(""));  // an omitted input
}

TEST_CASE("attribute helpers read with fallbacks, remove and replace", "[down_helpers]") {
  auto node = NodeFromText("y = Foo <k = 3, mode = \"edge\", axes = [0]> (x)");
  CHECK(AttrInt(node, "k", 0) == 3);
  CHECK(AttrInt(node, "absent", 9) == 9);
  CHECK(AttrString(node, "mode", "") == "edge");
  CHECK(AttrString(node, "absent", "constant") == "constant");
  CHECK(FindAttribute(node, "axes") != nullptr);
  load::SetInts(node, "axes", {1, 2});  // replaces, never duplicates
  CHECK(node.attribute_size() == 3);
  CHECK(test::IntsOf(node, "axes") == std::vector<std::int64_t>{1, 2});
  CHECK(FindAttribute(node, "axes")->type() == onnx::AttributeProto::INTS);
  load::RemoveAttribute(node, "k");
  load::RemoveAttribute(node, "never there");
  CHECK(node.attribute_size() == 2);
  CHECK(FindAttribute(node, "k") == nullptr);
}

TEST_CASE("built nodes and tensors", "[down_helpers]") {
  auto n = load::MakeNode("Add", {"a", ""}, {"c"}, "add0");
  CHECK(n.op_type() == "Add");
  CHECK(n.name() == "add0");
  CHECK(n.domain().empty());
  CHECK(test::Strings(n.input()) == std::vector<std::string>{"a", ""});
  CHECK(test::Strings(n.output()) == std::vector<std::string>{"c"});

  auto ints = load::IntTensor("shape", {0, 4, -1});
  CHECK(ints.data_type() == onnx::TensorProto::INT64);
  CHECK(std::vector<std::int64_t>(ints.dims().begin(), ints.dims().end()) == std::vector<std::int64_t>{3});
  CHECK(test::IntValues(ints) == std::vector<std::int64_t>{0, 4, -1});
  CHECK(load::IntTensor("none", {}).dims(0) == 0);

  auto scalar = load::FloatScalar("eps", 0.25f);
  CHECK(scalar.dims_size() == 0);
  CHECK(scalar.float_data_size() == 1);
  CHECK(scalar.float_data(0) == 0.25f);

  auto constant = load::ConstantNode("half", 0.5f);
  CHECK(constant.op_type() == "Constant");
  CHECK(constant.name() == "half");
  CHECK(test::Strings(constant.output()) == std::vector<std::string>{"half"});
  REQUIRE(constant.attribute_size() == 1);
  CHECK(constant.attribute(0).name() == "value");
  CHECK(constant.attribute(0).type() == onnx::AttributeProto::TENSOR);
  CHECK(constant.attribute(0).t().float_data(0) == 0.5f);
  CHECK(constant.attribute(0).t().dims_size() == 0);  // rank 0, as torch exports scalars
}
