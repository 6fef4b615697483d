// GroupNormalization-18/-21 down to opset 17 (src/load/adapt_group_normalization.cc):
// the operator's function body, with per-group (-18) or per-channel (-21) affine.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptGroupNormalization;
using test::AdapterScope;
using test::NodeFromText;
using Ints = std::vector<std::int64_t>;
using Names = std::vector<std::string>;

namespace {

const onnx::NodeProto& Producing(const std::vector<onnx::NodeProto>& nodes, const std::string& value) {
  for (const auto& n : nodes)
    for (const auto& o : n.output())
      if (o == value) return n;
  FAIL("no node writes " << value);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("GroupNormalization-18: normalized per group of [N, G, -1], scale and bias per group",
          "[adapt_group_normalization]") {
  AdapterScope scope(18);
  auto r = AdaptGroupNormalization(NodeFromText("y = GroupNormalization <num_groups = 4> (x, s, b)", "gn"), scope.ctx);
  CHECK(test::OpTypes(r.nodes) == Names{"Shape", "Reshape", "ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt",
                                        "Div", "Reshape", "Reshape", "Mul", "Add", "Reshape"});
  CHECK(test::IntValues(scope.Added("gn/grouped_shape")) == Ints{0, 4, -1});
  CHECK(test::IntValues(scope.Added("gn/column")) == Ints{-1, 1});
  const auto& eps = scope.Added("gn/epsilon");
  REQUIRE(eps.float_data_size() == 1);
  CHECK(eps.float_data(0) == 1e-5f);  // the default
  CHECK(eps.dims_size() == 0);
  // Mean and variance over the last axis of the grouped view.
  CHECK(test::IntsOf(r.nodes[2], "axes") == Ints{2});
  CHECK(test::IntsOf(r.nodes[5], "axes") == Ints{2});
  CHECK(test::Strings(r.nodes[1].input()) == Names{"x", "gn/grouped_shape"});
  CHECK(test::Strings(Producing(r.nodes, "gn/variance_eps").input()) == Names{"gn/variance", "gn/epsilon"});
  // The affine reads the normalized grouped view directly.
  CHECK(test::Strings(Producing(r.nodes, "gn/scaled").input()) == Names{"gn/normalized", "gn/scale"});
  CHECK(test::Strings(Producing(r.nodes, "gn/scale").input()) == Names{"s", "gn/column"});
  const auto& last = r.nodes.back();
  CHECK(last.name() == "gn");
  CHECK(test::Strings(last.input()) == Names{"gn/shifted", "gn/shape"});
  CHECK(test::Strings(last.output()) == Names{"y"});
  CHECK(r.what == "GroupNormalization-18: function body, per-group scale and bias");
}

TEST_CASE("GroupNormalization-21: scale and bias per channel on an [N, C, -1] view", "[adapt_group_normalization]") {
  AdapterScope scope(21);
  auto r = AdaptGroupNormalization(
      NodeFromText("y = GroupNormalization <num_groups = 2, epsilon = 0.001> (x, s, b)", "gn"), scope.ctx);
  CHECK(r.nodes.size() == 17);
  CHECK(scope.Added("gn/epsilon").float_data(0) == 0.001f);
  CHECK(test::IntValues(scope.Added("gn/starts")) == Ints{0});
  CHECK(test::IntValues(scope.Added("gn/ends")) == Ints{2});
  CHECK(test::IntValues(scope.Added("gn/minus1")) == Ints{-1});
  CHECK(test::Strings(Producing(r.nodes, "gn/nc").input()) == Names{"gn/shape", "gn/starts", "gn/ends"});
  const auto& concat = Producing(r.nodes, "gn/nc_shape");
  CHECK(concat.op_type() == "Concat");
  CHECK(AttrInt(concat, "axis", -1) == 0);
  CHECK(test::Strings(Producing(r.nodes, "gn/per_channel").input()) == Names{"gn/normalized", "gn/nc_shape"});
  CHECK(test::Strings(Producing(r.nodes, "gn/scaled").input()) == Names{"gn/per_channel", "gn/scale"});
  CHECK(r.what == "GroupNormalization-21: function body, per-channel scale and bias");
}

TEST_CASE("GroupNormalization without groups or inputs is refused", "[adapt_group_normalization]") {
  AdapterScope scope(18);
  auto e = test::ErrorOf([&] { AdaptGroupNormalization(NodeFromText("y = GroupNormalization (x, s, b)", "gn"), scope.ctx); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'gn' (GroupNormalization, opset 18): num_groups must be positive");
  e = test::ErrorOf([&] {
    AdaptGroupNormalization(NodeFromText("y = GroupNormalization <num_groups = 2> (x, s)", "gn"), scope.ctx);
  });
  CHECK_THAT(e.message, Catch::EndsWith("needs X, scale and bias"));
}
