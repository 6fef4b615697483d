// Reduce*-18 down to opset 17 (src/load/adapt_reduce.cc): axes input -> attribute.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptReduce;
using test::AdapterScope;
using test::NodeFromText;

TEST_CASE("a constant axes input becomes the axes attribute", "[adapt_reduce]") {
  AdapterScope scope(18);
  scope.Ints("axes", {1, -1});
  auto node = NodeFromText("y = ReduceMean <keepdims = 0, noop_with_empty_axes = 0> (x, axes)", "mean");
  auto r = AdaptReduce(node, scope.ctx);
  REQUIRE(r.nodes.size() == 1);
  const auto& out = r.nodes[0];
  CHECK(out.op_type() == "ReduceMean");
  CHECK(out.name() == "mean");
  CHECK(test::Strings(out.input()) == std::vector<std::string>{"x"});
  CHECK(test::IntsOf(out, "axes") == std::vector<std::int64_t>{1, -1});
  CHECK(AttrInt(out, "keepdims", 1) == 0);
  CHECK(FindAttribute(out, "noop_with_empty_axes") == nullptr);
  CHECK(r.what == "ReduceMean-18: axes input -> axes attribute");
  CHECK(scope.added.empty());
}

TEST_CASE("int32 axes are read too", "[adapt_reduce]") {
  AdapterScope scope(18);
  onnx::TensorProto axes;
  axes.set_name("axes");
  axes.set_data_type(onnx::TensorProto::INT32);
  axes.add_dims(1);
  axes.add_int32_data(2);
  scope.constants["axes"] = axes;
  auto r = AdaptReduce(NodeFromText("y = ReduceMax (x, axes)"), scope.ctx);
  CHECK(test::IntsOf(r.nodes[0], "axes") == std::vector<std::int64_t>{2});
}

TEST_CASE("no axes: all axes reduced, or the identity with noop_with_empty_axes", "[adapt_reduce]") {
  AdapterScope scope(18);
  auto all = AdaptReduce(NodeFromText("y = ReduceL2 (x)"), scope.ctx);
  REQUIRE(all.nodes.size() == 1);
  CHECK(all.nodes[0].op_type() == "ReduceL2");
  CHECK(FindAttribute(all.nodes[0], "axes") == nullptr);

  scope.Ints("empty", {});
  auto noop = AdaptReduce(NodeFromText("y = ReduceProd <noop_with_empty_axes = 1> (x, empty)", "p"), scope.ctx);
  REQUIRE(noop.nodes.size() == 1);
  CHECK(noop.nodes[0].op_type() == "Identity");
  CHECK(noop.nodes[0].name() == "p");
  CHECK(test::Strings(noop.nodes[0].input()) == std::vector<std::string>{"x"});
  CHECK(test::Strings(noop.nodes[0].output()) == std::vector<std::string>{"y"});
  CHECK(noop.what == "ReduceProd-18: no axes and noop_with_empty_axes -> Identity");
}

TEST_CASE("axes computed at run time are refused", "[adapt_reduce]") {
  AdapterScope scope(18);
  auto e = test::ErrorOf([&] { AdaptReduce(NodeFromText("y = ReduceSumSquare (x, a)", "r"), scope.ctx); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message ==
        "new.onnx: node 'r' (ReduceSumSquare, opset 18): axes 'a' is computed at run time; opset 17 needs it constant");
}
