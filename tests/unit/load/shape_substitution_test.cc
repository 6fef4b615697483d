// ShapeSubstitution (src/load/shape_substitution.h): a prepared graph's dims
// at new input shapes by putting numbers for its symbols, equal to what shape
// inference gives there; refused for a node whose rule holds at some values
// of its symbols only, and, per call, for shapes where it would not be exact.
#include <catch2/catch.hpp>

#include <memory>

#include "load/shape_inference.h"
#include "load/shape_model.h"
#include "load/shape_substitution.h"
#include "test_models.h"

namespace onnxfuse {
namespace {

// An encoder layer's shapes: position rows sliced to the length of `ids`
// (Shape -> Gather -> Unsqueeze -> Slice, as Hugging Face exports do), a
// projection, heads by a Reshape whose target is computed from shapes, the
// attention scores [1, 2, S, S], a Softmax, a reduction and a Concat.
std::string Encoder() {
  return std::string(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (int64[1,S] ids, float[1,S,8] x) => (float[1,S,8] y, float[1,2,S,S] probs, float[1,S,1] mean, float[1,S,16] both) <
        float[1,16,8] pos = )") +
         test::FloatList(std::vector<float>(16 * 8, 0.5f)) + R"(, float[8,8] w = )" +
         test::FloatList(std::vector<float>(64, 0.25f)) + R"(,
        int64[1] zero = {0}, int64[1] one = {1}, int64 at1 = {1}, int64[2] heads = {2, 4}> {
      shape = Shape (ids)
      len = Gather <axis = 0> (shape, at1)
      len1 = Unsqueeze (len, zero)
      p = Slice (pos, zero, len1, one)
      h = Add (x, p)
      m = MatMul (h, w)
      target = Concat <axis = 0> (one, len1, heads)
      r = Reshape (m, target)
      q = Transpose <perm = [0, 2, 1, 3]> (r)
      k = Transpose <perm = [0, 2, 3, 1]> (r)
      scores = MatMul (q, k)
      probs = Softmax <axis = -1> (scores)
      y = Relu (m)
      mean = ReduceMean <axes = [-1]> (y)
      both = Concat <axis = -1> (y, h)
    })";
}

// `prepared` at `shapes` by ONNX inference: what ShapeModel did before substituting.
Graph Inferred(const Graph& prepared, const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  onnx::ModelProto model = prepared.model();
  PinInputShapes(model, shapes, "test");
  InferValueShapes(model);
  return Graph(std::move(model), "test");
}

std::vector<std::string> DimsOfName(const Graph& graph, const std::string& name) {
  return graph.value(*graph.FindValue(name)).type.dim_params;
}

TEST_CASE("ShapeSubstitution: a whole symbolic axis sliced keeps its symbol at every length", "[shape_model]") {
  const Graph prepared = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,S] x) => (float[1,S] y) <int64[2] starts = {1, 0}, int64[2] ends = {2, 9223372036854775807}> {
      y = Slice (x, starts, ends)
    })");
  std::string why;
  const std::optional<ShapeSubstitution> substitution = ShapeSubstitution::Of(prepared, &why);
  INFO(why);
  REQUIRE(substitution);
  const auto dims = substitution->At({{"x", {2, 9}}});
  REQUIRE(dims);
  CHECK(*(*dims)[*prepared.FindValue("y")] == std::vector<std::int64_t>{1, 9});
}

TEST_CASE("ShapeSubstitution: an encoder's dims at each length are what inference gives", "[shape_model]") {
  const Graph prepared = test::GraphFromText(Encoder());
  std::string why;
  const std::optional<ShapeSubstitution> substitution = ShapeSubstitution::Of(prepared, &why);
  INFO(why);
  REQUIRE(substitution);
  for (std::int64_t s : {1, 2, 7, 16}) {
    INFO("S = " << s);
    const std::map<std::string, std::vector<std::int64_t>> shapes = {{"ids", {1, s}}, {"x", {1, s, 8}}};
    const auto dims = substitution->At(shapes);
    REQUIRE(dims);
    const Graph inferred = Inferred(prepared, shapes);
    for (ValueId v = 0; v < prepared.values().size(); ++v) {
      const Value& value = prepared.value(v);
      INFO(value.name);
      REQUIRE((*dims)[v]);
      CHECK(*(*dims)[v] == inferred.value(*inferred.FindValue(value.name)).type.dims);
    }
    CHECK(*(*dims)[*prepared.FindValue("probs")] == std::vector<std::int64_t>{1, 2, s, s});
  }
}

TEST_CASE("ShapeSubstitution: shapes where it would not be exact are left to inference", "[shape_model]") {
  const Graph prepared = test::GraphFromText(Encoder());
  const std::optional<ShapeSubstitution> substitution = ShapeSubstitution::Of(prepared);
  REQUIRE(substitution);
  // 17 position rows clamp to the table's 16: the Slice gives 16, not S.
  CHECK_FALSE(substitution->At({{"ids", {1, 17}}, {"x", {1, 17, 8}}}));
  CHECK_FALSE(substitution->At({{"ids", {1, 5}}, {"x", {1, 6, 8}}}));  // S given two values
  CHECK_FALSE(substitution->At({{"ids", {1, 0}}, {"x", {1, 0, 8}}}));  // an empty sequence
  CHECK_FALSE(substitution->At({{"ids", {1, 5}}}));                   // x's S left open
  CHECK_FALSE(substitution->At({{"ids", {1, 5}}, {"x", {1, 5, 9}}}));  // a dim the model fixes
  // ShapeModel then infers: the clamped Slice is not the 17 rows substituting would say.
  const ShapeModel model(std::make_shared<const Graph>(test::GraphFromText(Encoder())));
  const auto dims_of = [](const Graph& g, const std::string& name) { return g.value(*g.FindValue(name)).type.dims; };
  CHECK(dims_of(model.At({{"ids", {1, 12}}, {"x", {1, 12, 8}}}), "probs") == std::vector<std::int64_t>{1, 2, 12, 12});
  CHECK(dims_of(model.At({{"ids", {1, 17}}, {"x", {1, 17, 8}}}), "p") != std::vector<std::int64_t>{1, 17, 8});
}

TEST_CASE("ShapeSubstitution: DynamicQuantizeLinear keeps its input's dims, its scale and zero point scalars",
          "[shape_model]") {
  // ONNX Runtime's quantize_dynamic form of a projection over S tokens.
  const Graph prepared = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S,8] x) => (uint8[1,S,8] q, float s, uint8 z) {
      q, s, z = DynamicQuantizeLinear (x)
    })");
  std::string why;
  const std::optional<ShapeSubstitution> substitution = ShapeSubstitution::Of(prepared, &why);
  INFO(why);
  REQUIRE(substitution);
  const auto dims = substitution->At({{"x", {1, 5, 8}}});
  REQUIRE(dims);
  CHECK(*(*dims)[*prepared.FindValue("q")] == std::vector<std::int64_t>{1, 5, 8});
  CHECK((*(*dims)[*prepared.FindValue("s")]).empty());
  CHECK((*(*dims)[*prepared.FindValue("z")]).empty());
}

TEST_CASE("ShapeSubstitution: a rule that holds at some values of a symbol only is refused", "[shape_model]") {
  std::string why;
  // S meets 5: inference on the symbolic graph says [1, 5, 8], true at S = 1 or 5 only.
  const Graph broadcast = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S,8] x, float[1,5,8] c) => (float[1,5,8] y) {
      y = Add (x, c)
    })");
  CHECK_FALSE(ShapeSubstitution::Of(broadcast, &why));
  CHECK_THAT(why, Catch::Contains("'y'") || Catch::Contains("Add"));
  // K of the product is S against 8.
  const Graph product = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,S] x, float[8,3] w) => (float[2,3] y) {
      y = MatMul (x, w)
    })");
  CHECK_FALSE(ShapeSubstitution::Of(product, &why));
  CHECK_THAT(why, Catch::Contains("MatMul"));
  // No rule for Expand to a computed shape.
  const Graph expand = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S] x, float[3,1] z) => (float[3,S] y) {
      s = Shape (x)
      y = Expand (z, s)
    })");
  CHECK_FALSE(ShapeSubstitution::Of(expand, &why));
  CHECK_THAT(why, Catch::Contains("Expand"));
  // The slice's end is another input's length: exact only while T <= S, and S is a symbol.
  const Graph slice = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S] x, int64[1,T] ids) => (float[1,T] y) <int64[1] zero = {0}, int64[1] one = {1}, int64 at1 = {1}> {
      shape = Shape (ids)
      len = Gather <axis = 0> (shape, at1)
      len1 = Unsqueeze (len, zero)
      y = Slice (x, zero, len1, one)
    })");
  if (DimsOfName(slice, "y") == std::vector<std::string>{"", "T"}) {  // typed by its shape values
    CHECK_FALSE(ShapeSubstitution::Of(slice, &why));
    CHECK_THAT(why, Catch::Contains("Slice"));
  }
  // Nothing symbolic: nothing to substitute.
  CHECK_FALSE(ShapeSubstitution::Of(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y) {
      y = Relu (x)
    })")));
}

}  // namespace
}  // namespace onnxfuse
