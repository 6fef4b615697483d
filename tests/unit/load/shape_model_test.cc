// ShapeModel (src/load/shape_model.h): a prepared symbolic graph at new input
// shapes, by substitution or by shape inference: every value's shape at those shapes, the
// same nodes in the same order, the large initializers borrowed from the
// prepared graph (the same memory), the small ones copied; a dim the model
// fixes, and inputs that contradict each other, refused.
#include <catch2/catch.hpp>

#include <memory>

#include "load/shape_model.h"
#include "onnxfuse/error.h"
#include "test_models.h"

namespace onnxfuse {
namespace {

// y = (x + z) @ w + b; w has more than kCopiedElements elements (borrowed),
// b fewer (copied).
std::string Model() {
  return std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,4] x, float[N,8,4] z, float[4,1100] w = )") +
         test::FloatList(std::vector<float>(4 * 1100, 0.5f)) + R"(, float[1100] b = )" +
         test::FloatList(std::vector<float>(1100, 0.25f)) + R"() => (float[N,8,1100] y) {
      s = Add (x, z)
      m = MatMul (s, w)
      y = Add (m, b)
    })";
}

const TensorType& TypeOf(const Graph& graph, const std::string& name) {
  return graph.value(*graph.FindValue(name)).type;
}

TEST_CASE("ShapeModel: every value's shape at new input shapes, the weights borrowed", "[shape_model]") {
  auto prepared = std::make_shared<const Graph>(test::GraphFromText(Model()));
  REQUIRE_FALSE(TypeOf(*prepared, "m").NumElements());  // symbolic until a shape is pinned
  const ShapeModel shapes(prepared);
  for (std::int64_t n : {1, 3, 5}) {
    INFO("N = " << n);
    const Graph at = shapes.At({{"x", {n, 8, 4}}, {"z", {n, 8, 4}}});
    REQUIRE(at.num_nodes() == prepared->num_nodes());
    for (NodeId id = 0; id < at.num_nodes(); ++id) CHECK(at.node(id).op_type == prepared->node(id).op_type);
    CHECK(TypeOf(at, "s").dims == std::vector<std::int64_t>{n, 8, 4});
    CHECK(TypeOf(at, "m").dims == std::vector<std::int64_t>{n, 8, 1100});
    CHECK(TypeOf(at, "y").dims == std::vector<std::int64_t>{n, 8, 1100});
    const ValueId w = *at.FindValue("w"), b = *at.FindValue("b");
    // The weight and the small constant alike are the prepared graph's tensors, not copies.
    CHECK(at.ConstantTensor(w) == prepared->ConstantTensor(*prepared->FindValue("w")));
    CHECK(at.ConstantTensor(b) == prepared->ConstantTensor(*prepared->FindValue("b")));
    CHECK(at.ConstantTensor(b)->float_data_size() + at.ConstantTensor(b)->raw_data().size() / 4 == 1100);
    // Its model is the prepared model typed at these shapes, as a reload would read it.
    const Graph reloaded(at.model(), "reloaded");
    for (const char* name : {"x", "s", "m", "y"}) CHECK(TypeOf(reloaded, name).dims == TypeOf(at, name).dims);
    // The prepared graph, whose nodes and model it shares, stays symbolic.
    CHECK_FALSE(TypeOf(*prepared, "m").NumElements());
    CHECK_FALSE(TypeOf(Graph(prepared->model(), "again"), "m").NumElements());
  }
}

TEST_CASE("ShapeModel: releasing a borrowed weight leaves the prepared graph's", "[shape_model]") {
  auto prepared = std::make_shared<const Graph>(test::GraphFromText(Model()));
  const ShapeModel shapes(prepared);
  Graph at = shapes.At({{"x", {2, 8, 4}}, {"z", {2, 8, 4}}});
  const ValueId w = *at.FindValue("w");
  at.ReleaseInitializer(w);
  CHECK(at.ConstantTensor(w) == nullptr);
  const onnx::TensorProto* kept = prepared->ConstantTensor(*prepared->FindValue("w"));
  REQUIRE(kept != nullptr);
  CHECK(kept->float_data_size() + kept->raw_data().size() / 4 == 4 * 1100);
  // and the next shape still reads it
  const Graph again = shapes.At({{"x", {4, 8, 4}}, {"z", {4, 8, 4}}});
  CHECK(again.ConstantTensor(*again.FindValue("w")) == kept);
}

TEST_CASE("ShapeModel: a fixed dim changed, an unknown input and contradicting inputs are errors", "[shape_model]") {
  const ShapeModel shapes(std::make_shared<const Graph>(test::GraphFromText(Model())));
  auto fixed = test::ErrorOf([&] { shapes.At({{"x", {2, 9, 4}}, {"z", {2, 9, 4}}}); });
  CHECK(fixed.kind == ErrorKind::kUsage);
  CHECK_THAT(fixed.message, Catch::Contains("x dim 1 is 9 but the model fixes it to 8"));
  auto unknown = test::ErrorOf([&] { shapes.At({{"q", {2}}}); });
  CHECK(unknown.kind == ErrorKind::kUsage);
  CHECK_THAT(unknown.message, Catch::Contains("'q', which is not a graph input"));
  // x at N = 2 and z at N = 3 cannot be added
  auto clash = test::ErrorOf([&] { shapes.At({{"x", {2, 8, 4}}, {"z", {3, 8, 4}}}); });
  CHECK(clash.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(clash.message, Catch::Contains("shape inference failed at these input shapes"));
}

}  // namespace
}  // namespace onnxfuse
