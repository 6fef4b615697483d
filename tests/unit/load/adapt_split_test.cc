// Split-18 down to opset 17 (src/load/adapt_split.cc): num_outputs -> even
// parts, or a split input of ceil(length / parts) sizes when uneven.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptSplit;
using test::AdapterScope;
using test::NodeFromText;
using Ints = std::vector<std::int64_t>;

TEST_CASE("Split-13's form is left as it is", "[adapt_split]") {
  test::CheckLeftAsItIs(AdaptSplit, "a, b = Split <axis = 1> (x, sizes)", 18);
}

TEST_CASE("num_outputs dividing the axis evenly is Split-13 without sizes", "[adapt_split]") {
  AdapterScope scope(18);
  scope.dims["x"] = {1, 6, 4};
  auto r = AdaptSplit(NodeFromText("a, b, c = Split <axis = 1, num_outputs = 3> (x)"), scope.ctx);
  REQUIRE(r.nodes.size() == 1);
  CHECK(FindAttribute(r.nodes[0], "num_outputs") == nullptr);
  CHECK(AttrInt(r.nodes[0], "axis", 0) == 1);
  CHECK(test::Strings(r.nodes[0].input()) == std::vector<std::string>{"x"});
  CHECK(r.what == "Split-18: num_outputs -> even parts, one per output");
  CHECK(scope.added.empty());
}

TEST_CASE("an uneven axis gets sizes of ceil(length / parts), the last smaller", "[adapt_split]") {
  AdapterScope scope(18);
  scope.dims["x"] = {7, 2};
  auto r = AdaptSplit(NodeFromText("a, b, c = Split <num_outputs = 3> (x)", "s"), scope.ctx);
  CHECK(test::Strings(r.nodes[0].input()) == std::vector<std::string>{"x", "s/split"});
  CHECK(test::IntValues(scope.Added("s/split")) == Ints{3, 3, 1});
  CHECK(r.what == "Split-18: num_outputs -> split input (uneven parts)");

  scope.dims["z"] = {2, 5};  // a negative axis counts from the end; 4 parts of 2 leave an empty one
  AdaptSplit(NodeFromText("a, b, c, d = Split <axis = -1, num_outputs = 4> (z)", "t"), scope.ctx);
  CHECK(test::IntValues(scope.Added("t/split")) == Ints{2, 2, 1, 0});
}

TEST_CASE("unknown dims give even parts", "[adapt_split]") {
  AdapterScope scope(18);
  auto r = AdaptSplit(NodeFromText("a, b = Split <num_outputs = 2> (x)"), scope.ctx);
  CHECK(test::Strings(r.nodes[0].input()) == std::vector<std::string>{"x"});
  CHECK(r.what == "Split-18: num_outputs -> even parts, one per output");
}

TEST_CASE("num_outputs other than the number of outputs is refused", "[adapt_split]") {
  AdapterScope scope(18);
  auto e = test::ErrorOf([&] { AdaptSplit(NodeFromText("a, b = Split <num_outputs = 3> (x)", "s"), scope.ctx); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 's' (Split, opset 18): num_outputs differs from the number of outputs");
}
