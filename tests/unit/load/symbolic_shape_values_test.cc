// SymbolicShapeValues (src/load/symbolic_shape_values.h): shape values with
// symbols through Shape, Gather, Unsqueeze, Squeeze, Concat and Cast, and the
// Slice dims they decide; where they decide nothing, nothing is claimed.
#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "load/symbolic_shape_values.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Visits every node of `text`'s graph, its input types and its Constant
// nodes' values known; returns the Slice dims Visit gave, by output name, as text.
std::map<std::string, std::vector<std::string>> SliceDims(const char* text) {
  const onnx::ModelProto model = test::ParseModel(text);
  std::map<std::string, onnx::TypeProto> types;
  for (const auto& in : model.graph().input()) types[in.name()] = in.type();
  std::map<std::string, Tensor> known;
  SymbolicShapeValues values;
  std::map<std::string, std::vector<std::string>> sliced;
  const auto type_of = [&](const std::string& name) -> std::optional<SymbolicDims> {
    auto it = types.find(name);
    return it == types.end() ? std::nullopt : DimsOfType(it->second);
  };
  const auto value_of = [&](const std::string& name) -> const Tensor* {
    auto it = known.find(name);
    return it == known.end() ? nullptr : &it->second;
  };
  for (const auto& node : model.graph().node()) {
    if (node.op_type() == "Constant") {
      const onnx::TensorProto& t = node.attribute(0).t();
      Tensor& value = known[node.output(0)];
      value.elem_type = onnx::TensorProto::INT64;
      value.dims.assign(t.dims().begin(), t.dims().end());
      value.int_data.assign(t.int64_data().begin(), t.int64_data().end());
      continue;
    }
    if (std::optional<SymbolicDims> dims = values.Visit(node, type_of, value_of)) {
      std::vector<std::string>& out = sliced[node.output(0)];
      for (const SymbolicDim& d : *dims) out.push_back(d.symbol.empty() ? std::to_string(d.value) : d.symbol);
    }
  }
  return sliced;
}

}  // namespace

TEST_CASE("a Slice from 0 to a symbolic end takes the symbol, known starts and ends clamp as ONNX defines", "[load]") {
  const auto sliced = SliceDims(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[B, S] ids, float[1, 512, 8] table, float[B, S, 8] x) => (float[1, S, 8] a, float[B, S, 4] b, float[1, S, 8] c) {
      shape = Shape (ids)
      one = Constant <value = int64 {1}> ()
      length = Gather (shape, one)
      zero = Constant <value = int64[1] {0}> ()
      end = Unsqueeze (length, zero)
      axis1 = Constant <value = int64[1] {1}> ()
      a = Slice (table, zero, end, axis1)
      two = Constant <value = int64[1] {2}> ()
      four = Constant <value = int64[1] {4}> ()
      eight = Constant <value = int64[1] {8}> ()
      ends = Concat <axis = 0> (end, four)
      axes = Constant <value = int64[2] {1, 2}> ()
      starts = Constant <value = int64[2] {0, 0}> ()
      b = Slice (x, starts, ends, axes)
      shape_x = Shape (x)
      last = Slice (shape_x, two, eight)
      c = Identity (a)
    })");
  CHECK(sliced.at("a") == std::vector<std::string>{"1", "S", "8"});
  CHECK(sliced.at("b") == std::vector<std::string>{"B", "S", "4"});
  CHECK(sliced.count("last") == 0);  // a slice of a shape value: a value, not a Slice of data
  CHECK(sliced.size() == 2);
}

TEST_CASE("a Slice whose symbolic bounds do not decide its extent is left open", "[load]") {
  const auto sliced = SliceDims(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[1, S] ids, float[1, 512] table, float[1, 512] x) => (float[1, 512] a, float[1, 512] b, float[1, 512] c) {
      shape = Shape (ids)
      one = Constant <value = int64[1] {1}> ()
      zero = Constant <value = int64[1] {0}> ()
      axis1 = Constant <value = int64[1] {1}> ()
      two = Constant <value = int64[1] {2}> ()
      end = Gather <axis = 0> (shape, one)
      a = Slice (table, one, end, axis1)
      b = Slice (table, end, one, axis1)
      c = Slice (x, zero, end, axis1, two)
    })");
  CHECK(sliced.empty());  // a start of 1, a symbolic start to a known end, a step of 2
}

TEST_CASE("a Slice from past to past + 1 has one element, and a Reshape's -1 is what the symbols leave", "[load]") {
  const auto sliced = SliceDims(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, P, 64] cache, float[1, 512] arange, float[1, S, 4, 64] heads, int64[1, S] ids) => (float[1, 1] a, float[1, S, 256] b, float[S, 4, 64] c) {
      shape = Shape (cache)
      two = Constant <value = int64 {2}> ()
      past = Gather (shape, two)
      one = Constant <value = int64 {1}> ()
      next = Add (past, one)
      zero = Constant <value = int64[1] {0}> ()
      start = Unsqueeze (past, zero)
      end = Unsqueeze (next, zero)
      axis1 = Constant <value = int64[1] {1}> ()
      a = Slice (arange, start, end, axis1)
      ids_shape = Shape (ids)
      minus_one = Constant <value = int64[1] {-1}> ()
      merged = Concat <axis = 0> (ids_shape, minus_one)
      b = Reshape (heads, merged)
      length = Slice (ids_shape, axis1, axis1)
      split = Constant <value = int64[3] {-1, 4, 64}> ()
      c = Reshape (heads, split)
      p2 = Add (past, past)
    })");
  CHECK(sliced.at("a") == std::vector<std::string>{"1", "1"});
  CHECK(sliced.at("b") == std::vector<std::string>{"1", "S", "256"});
  CHECK(sliced.at("c") == std::vector<std::string>{"S", "4", "64"});
}

TEST_CASE("DimsOfType gives values and symbols, and nothing for an anonymous dim or an unknown rank", "[load]") {
  onnx::TypeProto type;
  auto* shape = type.mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_value(2);
  shape->add_dim()->set_dim_param("S");
  const std::optional<SymbolicDims> dims = DimsOfType(type);
  REQUIRE(dims);
  CHECK(*dims == SymbolicDims{{2, ""}, {0, "S"}});
  shape->add_dim();
  CHECK(!DimsOfType(type));
  onnx::TypeProto unranked;
  unranked.mutable_tensor_type()->set_elem_type(1);
  CHECK(!DimsOfType(unranked));
}
