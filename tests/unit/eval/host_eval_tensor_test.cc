// LpNormalization, MeanVarianceNormalization, Shape, Size, EyeLike and Det on
// the host evaluator (src/eval/host_eval_tensor.cc): ONNX's node
// tests, then LpNormalization (which has none) against its formula.
#include <catch2/catch.hpp>

#include <cmath>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using test::IntAttr;
using test::NodeOf;

TEST_CASE("MeanVarianceNormalization, Shape, Size, EyeLike and Det reproduce ONNX's node tests", "[host_eval]") {
  test::CheckNodeTestsOnHost("mvn", 1);
  test::CheckNodeTestsOnHost("shape", 10);
  test::CheckNodeTestsOnHost("size", 2);
  test::CheckNodeTestsOnHost("eyelike", 3);
  test::CheckNodeTestsOnHost("det", 2);
}

TEST_CASE("LpNormalization divides by the p-norm along the axis", "[host_eval]") {
  const Tensor x = test::TensorOf("", {2, 2}, {3, -4, 1, 1});
  auto out = eval::EvalOnHost(NodeOf("LpNormalization"), {&x}, 13).at(0);
  CHECK(out.data[0] == Approx(0.6));
  CHECK(out.data[1] == Approx(-0.8));
  CHECK(out.data[2] == Approx(1 / std::sqrt(2.0)));
  out = eval::EvalOnHost(NodeOf("LpNormalization", {IntAttr("p", 1), IntAttr("axis", 0)}), {&x}, 13).at(0);
  CHECK(out.data == std::vector<float>{0.75f, -0.8f, 0.25f, 0.2f});
  CHECK(test::ErrorOf([&] { eval::EvalOnHost(NodeOf("LpNormalization", {IntAttr("p", 3)}), {&x}, 13); }).kind ==
        ErrorKind::kInvalidModel);
}

TEST_CASE("Det of a singular matrix is 0, of a permutation -1, and Shape clamps start and end", "[host_eval]") {
  const Tensor m = test::TensorOf("", {2, 2, 2}, {1, 2, 2, 4, 0, 1, 1, 0});
  CHECK(eval::EvalOnHost(NodeOf("Det"), {&m}, 13).at(0).data == std::vector<float>{0, -1});
  auto out = eval::EvalOnHost(NodeOf("Shape", {IntAttr("start", -10), IntAttr("end", -1)}), {&m}, 15).at(0);
  CHECK(out.int_data == std::vector<std::int64_t>{2, 2});
}
