// ArgMax, ArgMin, TopK, Hardmax, Softmax, LogSoftmax, CumSum and Trilu on the host evaluator
// (src/eval/host_eval_axis.cc): ONNX's node tests, then edge cases
// the spec settles (ties, negative axes, k out of range).
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

using test::IntAttr;
using test::NodeOf;

TEST_CASE("ArgMax, ArgMin, TopK, Hardmax, CumSum and Trilu reproduce ONNX's node tests", "[host_eval]") {
  test::CheckNodeTestsOnHost("argmax", 16);
  test::CheckNodeTestsOnHost("argmin", 16);
  test::CheckNodeTestsOnHost("top_k", 3);
  test::CheckNodeTestsOnHost("hardmax", 7);
  test::CheckNodeTestsOnHost("softmax", 7);
  test::CheckNodeTestsOnHost("logsoftmax", 7);
  test::CheckNodeTestsOnHost("cumsum", 7);
  test::CheckNodeTestsOnHost("tril", 9);
  test::CheckNodeTestsOnHost("triu", 9);
}

TEST_CASE("TopK keeps the lower index first among equal values, largest and smallest", "[host_eval]") {
  const Tensor x = test::TensorOf("", {1, 5}, {3, 1, 3, 1, 2});
  const Tensor k = test::IntTensorOf("", {1}, {3});
  auto out = eval::EvalOnHost(NodeOf("TopK"), {&x, &k}, 13);
  CHECK(out.at(0).data == std::vector<float>{3, 3, 2});
  CHECK(out.at(1).int_data == std::vector<std::int64_t>{0, 2, 4});
  out = eval::EvalOnHost(NodeOf("TopK", {IntAttr("largest", 0), IntAttr("axis", -1)}), {&x, &k}, 13);
  CHECK(out.at(0).data == std::vector<float>{1, 1, 2});
  CHECK(out.at(1).int_data == std::vector<std::int64_t>{1, 3, 4});
  // Opset 1-9: k is an attribute.
  out = eval::EvalOnHost(NodeOf("TopK", {IntAttr("k", 2)}), {&x}, 9);
  CHECK(out.at(1).int_data == std::vector<std::int64_t>{0, 2});
  const Tensor too_many = test::IntTensorOf("", {1}, {6});
  CHECK(test::ErrorOf([&] { eval::EvalOnHost(NodeOf("TopK"), {&x, &too_many}, 13); }).kind ==
        ErrorKind::kInvalidModel);
}

TEST_CASE("ArgMax's select_last_index and a negative axis, and an axis out of range refused", "[host_eval]") {
  const Tensor x = test::TensorOf("", {2, 3}, {5, 1, 5, 0, 0, -1});
  auto out = eval::EvalOnHost(NodeOf("ArgMax", {IntAttr("axis", -1), IntAttr("keepdims", 0)}), {&x}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2});
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{0, 0});
  out = eval::EvalOnHost(NodeOf("ArgMax", {IntAttr("axis", -1), IntAttr("select_last_index", 1)}), {&x}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2, 1});
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{2, 1});
  out = eval::EvalOnHost(NodeOf("ArgMin", {IntAttr("axis", 1)}), {&x}, 13);
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{1, 2});
  const auto e = test::ErrorOf([&] { eval::EvalOnHost(NodeOf("ArgMax", {IntAttr("axis", 2)}), {&x}, 13); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("node 'n' (ArgMax)"));
}

TEST_CASE("CumSum of integers is exact beyond 2^53, and Hardmax before 13 flattens from the axis", "[host_eval]") {
  const Tensor x = test::IntTensorOf("", {3}, {(std::int64_t{1} << 60) + 1, 1, 1});
  const Tensor axis = test::IntTensorOf("", {}, {0});
  auto out = eval::EvalOnHost(NodeOf("CumSum", {IntAttr("exclusive", 1), IntAttr("reverse", 1)}), {&x, &axis}, 14);
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{2, 1, 0});
  out = eval::EvalOnHost(NodeOf("CumSum"), {&x, &axis}, 14);
  CHECK(out.at(0).int_data.back() == (std::int64_t{1} << 60) + 3);
  // [1, 2, 2] with axis 1 before opset 13: one row of 4, the first maximum wins.
  const Tensor h = test::TensorOf("", {1, 2, 2}, {1, 4, 4, 2});
  CHECK(eval::EvalOnHost(NodeOf("Hardmax"), {&h}, 11).at(0).data == std::vector<float>{0, 1, 0, 0});
  CHECK(eval::EvalOnHost(NodeOf("Hardmax"), {&h}, 13).at(0).data == std::vector<float>{0, 1, 1, 0});
}

TEST_CASE("Softmax before 13 spans every dim from the axis, from 13 one axis, and large values do not overflow",
          "[host_eval]") {
  const Tensor x = test::TensorOf("", {1, 2, 2}, {0, 0, 1000, 1000});
  // Opset 11, axis 1: one row of four, e^1000 taken relative to the maximum.
  auto out = eval::EvalOnHost(NodeOf("Softmax", {IntAttr("axis", 1)}), {&x}, 11);
  CHECK(out.at(0).data == std::vector<float>{0, 0, 0.5f, 0.5f});
  // Opset 13, axis 1: two rows of two along dim 1, for each of the last dim's columns.
  out = eval::EvalOnHost(NodeOf("Softmax", {IntAttr("axis", 1)}), {&x}, 13);
  CHECK(out.at(0).data == std::vector<float>{0, 0, 1, 1});
  out = eval::EvalOnHost(NodeOf("LogSoftmax"), {&x}, 13);  // axis -1: rows of two equal values
  for (float v : out.at(0).data) CHECK(v == Approx(-0.6931471805599453));
  const Tensor ints = test::IntTensorOf("", {2}, {1, 2});
  CHECK(test::ErrorOf([&] { eval::EvalOnHost(NodeOf("Softmax"), {&ints}, 13); }).kind == ErrorKind::kInvalidModel);
}
