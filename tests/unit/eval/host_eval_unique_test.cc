// Unique on the host evaluator (src/eval/host_eval_unique.cc): ONNX's node
// tests, then the order of first occurrence along an axis and an empty input.
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using test::IntAttr;
using test::NodeOf;

TEST_CASE("Unique reproduces ONNX's node tests", "[host_eval]") { test::CheckNodeTestsOnHost("unique", 5); }

TEST_CASE("Unique along an axis, unsorted: slices in the order they first occur", "[host_eval]") {
  // x [2, 4]: columns (1, 5), (0, 2), (1, 5), (0, 1); distinct in first-occurrence order: 0, 1, 3.
  const Tensor x = test::TensorOf("", {2, 4}, {1, 0, 1, 0, 5, 2, 5, 1});
  const auto out = eval::EvalOnHost(NodeOf("Unique", {IntAttr("axis", 1), IntAttr("sorted", 0)}), {&x}, 11);
  REQUIRE(out.size() == 4);
  CHECK(out[0].dims == std::vector<std::int64_t>{2, 3});
  CHECK(out[0].data == std::vector<float>{1, 0, 0, 5, 2, 1});
  CHECK(out[1].int_data == std::vector<std::int64_t>{0, 1, 3});
  CHECK(out[2].int_data == std::vector<std::int64_t>{0, 1, 0, 2});
  CHECK(out[3].int_data == std::vector<std::int64_t>{2, 1, 1});
  // Sorted: columns (0, 1) < (0, 2) < (1, 5).
  const auto sorted = eval::EvalOnHost(NodeOf("Unique", {IntAttr("axis", -1)}), {&x}, 11);
  CHECK(sorted[0].data == std::vector<float>{0, 0, 1, 1, 2, 5});
  CHECK(sorted[1].int_data == std::vector<std::int64_t>{3, 1, 0});
  CHECK(sorted[2].int_data == std::vector<std::int64_t>{2, 1, 2, 0});
}

TEST_CASE("Unique of an empty tensor: empty outputs", "[host_eval]") {
  const Tensor x = test::IntTensorOf("", {0}, {});
  const auto out = eval::EvalOnHost(NodeOf("Unique"), {&x}, 11);
  CHECK(out[0].dims == std::vector<std::int64_t>{0});
  CHECK(out[1].dims == std::vector<std::int64_t>{0});
  CHECK(out[2].dims == std::vector<std::int64_t>{0});
}
