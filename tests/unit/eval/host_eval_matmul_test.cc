// MatMul on the host evaluator (src/eval/host_eval_matmul.cc): ONNX's node
// tests, then numpy.matmul's forms the spec names (1-D operands, broadcast
// batch dims) and integers.
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

using test::NodeOf;

TEST_CASE("MatMul reproduces ONNX's node tests", "[host_eval]") { test::CheckNodeTestsOnHost("matmul", 3); }

TEST_CASE("MatMul broadcasts batch dims and takes 1-D operands as numpy.matmul does", "[host_eval]") {
  // a [2, 1, 2, 3] x b [3, 2]: b serves both batches; then [1, 3] rows of a [2, 3] per batch of b [2, 3, 1].
  const Tensor a = test::TensorOf("", {2, 1, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 0, -2});
  const Tensor b = test::TensorOf("", {3, 2}, {1, 0, 0, 1, 1, 1});
  auto out = eval::EvalOnHost(NodeOf("MatMul"), {&a, &b}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2, 1, 2, 2});
  CHECK(out.at(0).data == std::vector<float>{4, 5, 10, 11, 0, 1, 0, -2});
  const Tensor v = test::TensorOf("", {3}, {1, 2, 3});
  out = eval::EvalOnHost(NodeOf("MatMul"), {&v, &b}, 13);  // [3] x [3, 2] -> [2]
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2});
  CHECK(out.at(0).data == std::vector<float>{4, 5});
  const Tensor m = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  out = eval::EvalOnHost(NodeOf("MatMul"), {&m, &v}, 13);  // [2, 3] x [3] -> [2]
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2});
  CHECK(out.at(0).data == std::vector<float>{14, 32});
  out = eval::EvalOnHost(NodeOf("MatMul"), {&v, &v}, 13);  // [3] x [3] -> a scalar
  CHECK(out.at(0).dims.empty());
  CHECK(out.at(0).data == std::vector<float>{14});
}

TEST_CASE("MatMul of int64 is exact, and inner dims that differ are refused", "[host_eval]") {
  const Tensor a = test::IntTensorOf("", {1, 2}, {std::int64_t{1} << 40, 3});
  const Tensor b = test::IntTensorOf("", {2, 1}, {1 << 20, 1});
  auto out = eval::EvalOnHost(NodeOf("MatMul"), {&a, &b}, 13);
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{(std::int64_t{1} << 60) + 3});
  const Tensor c = test::TensorOf("", {2, 2}, {1, 2, 3, 4});
  const Tensor d = test::TensorOf("", {3, 2}, {1, 2, 3, 4, 5, 6});
  const auto e = test::ErrorOf([&] { eval::EvalOnHost(NodeOf("MatMul"), {&c, &d}, 13); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("inner dims differ"));
}
