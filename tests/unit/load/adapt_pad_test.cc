// Pad-18/19 down to opset 17 (src/load/adapt_pad.cc): pads of the listed axes
// become pads of every axis; mode "wrap" is refused.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptPad;
using test::AdapterScope;
using test::NodeFromText;
using Ints = std::vector<std::int64_t>;
using Names = std::vector<std::string>;

TEST_CASE("pads of listed axes are spread over every axis of the input", "[adapt_pad]") {
  AdapterScope scope(18);
  scope.dims["x"] = {1, 3, 8, 8};
  scope.Ints("pads", {1, 2, 3, 4});  // begin of axes 1 and -1, then their ends
  scope.Ints("axes", {1, -1});
  auto r = AdaptPad(NodeFromText("y = Pad <mode = \"reflect\"> (x, pads, , axes)", "p"), scope.ctx);
  REQUIRE(r.nodes.size() == 1);
  const auto& out = r.nodes[0];
  CHECK(test::Strings(out.input()) == Names{"x", "p/pads"});  // axes gone, the empty constant_value too
  CHECK(test::IntValues(scope.Added("p/pads")) == Ints{0, 1, 0, 2, 0, 3, 0, 4});
  CHECK(AttrString(out, "mode", "") == "reflect");
  CHECK(r.what == "Pad-18: pads of listed axes -> pads of every axis");

  auto valued = AdaptPad(NodeFromText("y = Pad (x, pads, cv, axes)", "q"), scope.ctx);
  CHECK(test::Strings(valued.nodes[0].input()) == Names{"x", "q/pads", "cv"});
}

TEST_CASE("without axes the node is Pad-13 already", "[adapt_pad]") {
  test::CheckLeftAsItIs(AdaptPad, "y = Pad <mode = \"edge\"> (x, pads)", 19);
}

TEST_CASE("Pad refusals name the node and the reason", "[adapt_pad]") {
  AdapterScope scope(19);
  scope.Ints("pads", {1, 1});
  scope.Ints("axes", {0});
  auto refused = [&](const std::string& text) {
    auto e = test::ErrorOf([&] { AdaptPad(NodeFromText(text, "p"), scope.ctx); });
    CHECK(e.kind == ErrorKind::kUnsupported);
    return e.message;
  };
  CHECK(refused("y = Pad <mode = \"wrap\"> (x, pads)") ==
        "new.onnx: node 'p' (Pad, opset 19): mode 'wrap' has no equivalent at opset 17");
  CHECK_THAT(refused("y = Pad (x, pads, , runtime_axes)"), Catch::EndsWith("pads and axes must be constants to be "
                                                                           "written for every axis at opset 17"));
  CHECK_THAT(refused("y = Pad (x, pads, , axes)"),
             Catch::EndsWith("the shape of 'x' is neither declared nor inferable, and the rewrite needs it"));
  scope.dims["x"] = {4, 4};
  scope.Ints("three", {1, 1, 1});
  CHECK_THAT(refused("y = Pad (x, three, , axes)"), Catch::EndsWith("pads has 3 values for 1 axes"));
  scope.Ints("far", {2});
  CHECK_THAT(refused("y = Pad (x, pads, , far)"), Catch::EndsWith("axis 2 is out of range"));
}

TEST_CASE("an input of unknown rank is refused, with why inference gave nothing", "[adapt_pad]") {
  AdapterScope scope(18);
  scope.Ints("pads", {1, 1});
  scope.Ints("axes", {0});
  scope.ctx.inference_failure = "[ShapeInferenceError] no";
  auto e = test::ErrorOf([&] { AdaptPad(NodeFromText("y = Pad (x, pads, , axes)"), scope.ctx); });
  CHECK_THAT(e.message, Catch::EndsWith("the shape of 'x' is neither declared nor inferable, and the rewrite needs it "
                                        "(shape inference of the nodes before it: [ShapeInferenceError] no)"));
  CHECK(scope.added.empty());
}
