// Resize-18/19 down to opset 17 (src/load/adapt_resize.cc): default new
// attributes dropped, any other value refused.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptResize;
using test::AdapterScope;
using test::NodeFromText;

TEST_CASE("antialias 0 and policy stretch are dropped, other attributes kept", "[adapt_resize]") {
  AdapterScope scope(18);
  auto r = AdaptResize(NodeFromText("y = Resize <antialias = 0, keep_aspect_ratio_policy = \"stretch\", "
                                    "mode = \"linear\"> (x, , scales)", "rs"),
                       scope.ctx);
  REQUIRE(r.nodes.size() == 1);
  const auto& out = r.nodes[0];
  CHECK(out.attribute_size() == 1);
  CHECK(AttrString(out, "mode", "") == "linear");
  CHECK(test::Strings(out.input()) == std::vector<std::string>{"x", "", "scales"});
  CHECK(out.name() == "rs");
  CHECK(r.what == "Resize-18: default antialias and keep_aspect_ratio_policy dropped");
}

TEST_CASE("new Resize behaviour is refused", "[adapt_resize]") {
  AdapterScope scope(19);
  auto refused = [&](const std::string& attributes) {
    auto e = test::ErrorOf([&] { AdaptResize(NodeFromText("y = Resize <" + attributes + "> (x, , s)", "rs"), scope.ctx); });
    CHECK(e.kind == ErrorKind::kUnsupported);
    CHECK_THAT(e.message, Catch::StartsWith("new.onnx: node 'rs' (Resize, opset 19): "));
    return e.message;
  };
  CHECK_THAT(refused("antialias = 1"), Catch::EndsWith("antialias = 1 has no equivalent at opset 17"));
  CHECK_THAT(refused("keep_aspect_ratio_policy = \"not_larger\""),
             Catch::EndsWith("keep_aspect_ratio_policy other than 'stretch' has no equivalent at opset 17"));
  CHECK_THAT(refused("axes = [2, 3]"), Catch::EndsWith("the axes attribute has no equivalent at opset 17"));
  CHECK_THAT(refused("coordinate_transformation_mode = \"half_pixel_symmetric\""),
             Catch::EndsWith("coordinate_transformation_mode 'half_pixel_symmetric' has no equivalent at opset 17"));
}
