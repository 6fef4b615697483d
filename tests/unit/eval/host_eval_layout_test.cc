// Split, Pad, Expand and Transpose on the host (src/eval/host_eval_layout.cc),
// called directly on nodes; expected values worked out by hand from ONNX
// Operators.md (Split-13, Pad-13), or element by element from the definition.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval.h"
#include "onnxfuse/error.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using eval::EvalOnHost;


TEST_CASE("Split into given sizes and into equal parts, along any axis", "[host_eval_layout]") {
  Graph g = test::OneNodeGraph("float[2,5] x, int64[2] s", "float[2,2] a, float[2,3] b", "a, b = Split <axis = 1> (x, s)");
  const Tensor x = test::TensorOf("x", {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor sizes = test::IntTensorOf("s", {2}, {2, 3});
  auto out = EvalOnHost(g.node(0), {&x, &sizes}, 13);
  REQUIRE(out.size() == 2);
  CHECK(out[0].dims == std::vector<std::int64_t>{2, 2});
  CHECK(out[0].data == std::vector<float>{0, 1, 5, 6});
  CHECK(out[1].data == std::vector<float>{2, 3, 4, 7, 8, 9});

  Graph equal = test::OneNodeGraph("int64[4,1] x", "int64[2,1] a, int64[2,1] b", "a, b = Split (x)");
  const Tensor ints = test::IntTensorOf("x", {4, 1}, {7, -1, 3, 5});
  out = EvalOnHost(equal.node(0), {&ints}, 13);
  CHECK(out[0].int_data == std::vector<std::int64_t>{7, -1});
  CHECK(out[1].int_data == std::vector<std::int64_t>{3, 5});

  const Tensor wrong = test::IntTensorOf("s", {2}, {2, 2});
  auto e = test::ErrorOf([&] { EvalOnHost(g.node(0), {&x, &wrong}, 13); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("split sizes do not add up to the axis length 5"));
}

TEST_CASE("Pad: constant with a value, reflect without repeating the edge, edge, and negative pads crop",
          "[host_eval_layout]") {
  const Tensor x = test::TensorOf("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto pad = [&](const std::string& mode, std::vector<std::int64_t> pads) {
    Graph g = test::OneNodeGraph("float[2,3] x, int64[4] p, float v", "float[A,B] y", "y = Pad <mode = \"" + mode + "\"> (x, p, v)");
    const Tensor p = test::IntTensorOf("p", {4}, std::move(pads));
    const Tensor v = test::TensorOf("v", {}, {9});
    return EvalOnHost(g.node(0), {&x, &p, &v}, 13).at(0);
  };
  // pads = [begin dim 0, begin dim 1, end dim 0, end dim 1]
  Tensor c = pad("constant", {0, 1, 1, 0});
  CHECK(c.dims == std::vector<std::int64_t>{3, 4});
  CHECK(c.data == std::vector<float>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9});
  Tensor r = pad("reflect", {0, 2, 0, 1});
  CHECK(r.data == std::vector<float>{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  Tensor e = pad("edge", {1, 0, 0, 1});
  CHECK(e.data == std::vector<float>{1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6});
  Tensor crop = pad("constant", {0, -1, -1, 0});
  CHECK(crop.dims == std::vector<std::int64_t>{1, 2});
  CHECK(crop.data == std::vector<float>{2, 3});
  auto error = test::ErrorOf([&] { pad("reflect", {0, 3, 0, 0}); });
  CHECK(error.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(error.message, Catch::Contains("reflect pads of dim 1 reach past the input's edge"));
}

TEST_CASE("Expand copies elements as stored: int64 beyond 2^53 exactly, broadcast on every side",
          "[host_eval_layout]") {
  const std::int64_t big = (std::int64_t{1} << 62) + 1;  // no exact double
  const Tensor column = test::IntTensorOf("", {2, 1}, {big, -big});
  const Tensor to_2x3 = test::IntTensorOf("", {2}, {2, 3}), to_2x1 = test::IntTensorOf("", {2}, {2, 1});
  const Tensor expanded = eval::EvalOnHost(test::NodeOf("Expand"), {&column, &to_2x3}, 13).at(0);
  CHECK(expanded.dims == std::vector<std::int64_t>{2, 3});
  CHECK(expanded.int_data == std::vector<std::int64_t>{big, big, big, -big, -big, -big});
  const Tensor row = test::TensorOf("", {3}, {1.5f, 2.5f, 3.5f});
  const Tensor rows = eval::EvalOnHost(test::NodeOf("Expand"), {&row, &to_2x1}, 13).at(0);
  CHECK(rows.data == std::vector<float>{1.5f, 2.5f, 3.5f, 1.5f, 2.5f, 3.5f});
  // Blocks copied, blocks filled, and both around broadcast dims in the middle.
  for (const auto& [in, shape] : std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>{
           {{2, 1, 4}, {2, 3, 4}}, {{1, 3, 1}, {2, 3, 5}}, {{4, 1, 1, 1}, {4, 3, 2, 2}}, {{}, {2, 2}}, {{1}, {3}},
           {{2, 3}, {2, 3}}, {{3, 1}, {2, 3, 0}}}) {
    INFO(eval::DimsString(in) << " to " << eval::DimsString(shape));
    std::vector<float> values(static_cast<std::size_t>(eval::Product(in)));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) + 0.5f;
    const Tensor x = test::TensorOf("", in, values), to = test::IntTensorOf("", {std::int64_t(shape.size())}, shape);
    const Tensor y = eval::EvalOnHost(test::NodeOf("Expand"), {&x, &to}, 13).at(0);
    REQUIRE(y.dims == eval::BroadcastDims(in, shape));
    REQUIRE(y.data.size() == static_cast<std::size_t>(eval::Product(y.dims)));
    int wrong = 0;
    for (std::size_t i = 0; i < y.data.size(); ++i)
      wrong += y.data[i] != values[static_cast<std::size_t>(eval::BroadcastIndex(std::int64_t(i), y.dims, in))];
    CHECK(wrong == 0);
  }
}

TEST_CASE("Transpose swapping the last two axes (tiled) equals the element-wise definition", "[host_eval_layout]") {
  // Tiles of 16: rows and columns of 1, around 16 and beyond 32; float and int64.
  for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {1, 17}, {15, 1}, {16, 16}, {17, 33}, {40, 7}}) {
    INFO(rows << "x" << cols);
    const std::vector<std::int64_t> dims = {2, 3, rows, cols};
    const std::int64_t n = 6 * rows * cols;
    std::vector<float> values(static_cast<std::size_t>(n));
    std::vector<std::int64_t> ints(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = static_cast<float>(i) * 0.5f, ints[std::size_t(i)] = (1LL << 60) + i;
    const Tensor x = test::TensorOf("", dims, values), xi = test::IntTensorOf("", dims, ints);
    const Node node = test::NodeOf("Transpose", {test::IntsAttr("perm", {0, 1, 3, 2})});
    const Tensor y = eval::EvalOnHost(node, {&x}, 13).at(0), yi = eval::EvalOnHost(node, {&xi}, 13).at(0);
    CHECK(y.dims == std::vector<std::int64_t>{2, 3, cols, rows});
    int wrong = 0;
    for (std::int64_t m = 0; m < 6; ++m)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
          const auto from = std::size_t((m * rows + r) * cols + c), to = std::size_t((m * cols + c) * rows + r);
          wrong += y.data[to] != values[from] || yi.int_data[to] != ints[from];
        }
    CHECK(wrong == 0);
  }
}
