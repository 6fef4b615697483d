// SeedComputedTypes (src/load/computed_types.h) through InferValueShapes: the
// position ids of a sequence sliced by a length computed from Shape, which
// libonnx 1.12 leaves untyped with everything after it, typed at a pinned
// length and, with the symbol, on the symbolic model; and a graph inference
// types whole, left as it was.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "load/computed_types.h"
#include "load/shape_inference.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// The dims value_info gives `name`, or {-1} when it is missing or not static.
std::vector<std::int64_t> DimsOf(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& vi : model.graph().value_info()) {
    if (vi.name() != name) continue;
    std::vector<std::int64_t> dims;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return {-1};
      dims.push_back(d.dim_value());
    }
    return vi.type().tensor_type().has_shape() ? dims : std::vector<std::int64_t>{-1};
  }
  return {-1};
}

// The dims value_info gives `name`, values and symbols as text; {"?"} when it
// is missing, of unknown rank, or has an anonymous unknown dim.
std::vector<std::string> SymbolicDimsOf(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& vi : model.graph().value_info()) {
    if (vi.name() != name || !vi.type().tensor_type().has_shape()) continue;
    std::vector<std::string> dims;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (d.has_dim_value()) dims.push_back(std::to_string(d.dim_value()));
      else if (d.has_dim_param()) dims.push_back(d.dim_param());
      else return {"?"};
    }
    return dims;
  }
  return {"?"};
}

// ids [1, S] -> positions = arange[:, :S] (Slice by Shape(ids)[1]) -> table rows, + embeddings.
const char* const kPositions = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (int64[1, S] ids) => (float[1, S, 4] y) {
    shape = Shape (ids)
    one = Constant <value = int64 {1}> ()
    length = Gather (shape, one)
    zero_axis = Constant <value = int64[1] {0}> ()
    end = Unsqueeze (length, zero_axis)
    arange = Constant <value = int64[1, 8] {0, 1, 2, 3, 4, 5, 6, 7}> ()
    start = Constant <value = int64[1] {0}> ()
    axis = Constant <value = int64[1] {1}> ()
    positions = Slice (arange, start, end, axis)
    table = Constant <value = float[8, 4] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                            16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}> ()
    rows = Gather (table, positions)
    words = Gather (table, ids)
    y = Add (words, rows)
  })";

}  // namespace

TEST_CASE("position ids sliced by a computed length are typed at a pinned length, and what follows", "[load]") {
  onnx::ModelProto model = test::ParseModel(kPositions);
  PinInputShapes(model, {{"ids", {1, 5}}}, "positions");
  InferValueShapes(model);
  CHECK(DimsOf(model, "positions") == std::vector<std::int64_t>{1, 5});
  CHECK(DimsOf(model, "rows") == std::vector<std::int64_t>{1, 5, 4});
  CHECK(DimsOf(model, "words") == std::vector<std::int64_t>{1, 5, 4});
}

TEST_CASE("position ids sliced by a symbolic length are typed with the symbol, and what follows", "[load]") {
  onnx::ModelProto model = test::ParseModel(kPositions);
  InferValueShapes(model);
  CHECK(SymbolicDimsOf(model, "positions") == std::vector<std::string>{"1", "S"});
  CHECK(SymbolicDimsOf(model, "rows") == std::vector<std::string>{"1", "S", "4"});
  CHECK(SymbolicDimsOf(model, "words") == std::vector<std::string>{"1", "S", "4"});
}

TEST_CASE("SeedComputedTypes adds nothing where inference typed every value", "[load]") {
  onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[2, 3] y) {
      y = Relu (x)
    })");
  InferValueShapes(model);
  const auto before = model.SerializeAsString();
  CHECK(SeedComputedTypes(model).empty());
  CHECK(model.SerializeAsString() == before);
}
