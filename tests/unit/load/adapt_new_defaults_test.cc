// Ops whose new attribute's default is the opset-17 behaviour
// (src/load/adapt_new_defaults.cc): Cast/CastLike-19, Scatter*-18, GridSample-20.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptNewDefaults;
using test::AdapterScope;
using test::NodeFromText;

TEST_CASE("Cast and CastLike lose saturate", "[adapt_new_defaults]") {
  AdapterScope scope(19);
  auto r = AdaptNewDefaults(NodeFromText("y = Cast <to = 1, saturate = 1> (x)"), scope.ctx);
  CHECK(FindAttribute(r.nodes[0], "saturate") == nullptr);
  CHECK(AttrInt(r.nodes[0], "to", 0) == 1);
  CHECK(r.what == "Cast-19: saturate dropped (no float8 target)");
  auto like = AdaptNewDefaults(NodeFromText("y = CastLike <saturate = 0> (x, t)"), scope.ctx);
  CHECK(like.what == "CastLike-19: saturate dropped (no float8 target)");
  auto plain = AdaptNewDefaults(NodeFromText("y = Cast <to = 7> (x)"), scope.ctx);
  CHECK(plain.what.empty());
  CHECK(plain.nodes[0].attribute_size() == 1);
}

TEST_CASE("ScatterElements and ScatterND: max and min reductions are refused", "[adapt_new_defaults]") {
  AdapterScope scope(18);
  auto add = AdaptNewDefaults(NodeFromText("y = ScatterND <reduction = \"add\"> (x, i, u)"), scope.ctx);
  CHECK(add.what.empty());
  CHECK(AttrString(add.nodes[0], "reduction", "") == "add");
  auto e = test::ErrorOf([&] {
    AdaptNewDefaults(NodeFromText("y = ScatterElements <reduction = \"max\"> (x, i, u)", "sc"), scope.ctx);
  });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'sc' (ScatterElements, opset 18): reduction 'max' has no equivalent at opset 17");
}

TEST_CASE("GridSample-20: modes take their opset-16 names, only 4-D inputs", "[adapt_new_defaults]") {
  AdapterScope scope(20);
  scope.dims["x"] = {1, 3, 8, 8};
  auto mode_of = [&](const std::string& text) {
    auto r = AdaptNewDefaults(NodeFromText(text), scope.ctx);
    return AttrString(r.nodes[0], "mode", "");
  };
  CHECK(mode_of("y = GridSample (x, g)") == "bilinear");  // the default, linear, written out
  CHECK(mode_of("y = GridSample <mode = \"cubic\"> (x, g)") == "bicubic");
  CHECK(mode_of("y = GridSample <mode = \"nearest\", align_corners = 1> (x, g)") == "nearest");
  auto r = AdaptNewDefaults(NodeFromText("y = GridSample <mode = \"linear\"> (x, g)"), scope.ctx);
  CHECK(r.what == "GridSample-20: mode 'linear' -> its opset-16 name");

  scope.dims["v"] = {1, 3, 4, 8, 8};
  auto e = test::ErrorOf([&] { AdaptNewDefaults(NodeFromText("y = GridSample (v, g)", "gs"), scope.ctx); });
  CHECK_THAT(e.message, Catch::EndsWith("a 5-D input has no equivalent at opset 17"));

  AdapterScope older(19);  // GridSample-16's names still
  auto kept = AdaptNewDefaults(NodeFromText("y = GridSample <mode = \"bilinear\"> (x, g)"), older.ctx);
  CHECK(kept.what.empty());
}
