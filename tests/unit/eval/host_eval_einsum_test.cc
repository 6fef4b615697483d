// Einsum on the host evaluator (src/eval/host_eval_einsum.cc): ONNX's
// node tests, then the forms they miss (implicit output, a diagonal, "..."
// broadcasting) against loops, and the refusals.
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using test::NodeOf;
using test::StringAttr;

namespace {

std::vector<Tensor> Einsum(const std::string& equation, std::vector<const Tensor*> in) {
  return eval::EvalOnHost(NodeOf("Einsum", {StringAttr("equation", equation)}), in, 12);
}

}  // namespace

TEST_CASE("Einsum reproduces ONNX's node tests", "[host_eval]") { test::CheckNodeTestsOnHost("einsum", 5); }

TEST_CASE("Einsum: implicit output, a diagonal, '...' broadcast, a matmul", "[host_eval]") {
  const Tensor a = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = test::TensorOf("", {3, 2}, {1, 0, 0, 1, 1, 1});
  // Implicit "ij,jk": the letters used once, alphabetical: ik.
  auto out = Einsum("ij,jk", {&a, &b}).at(0);
  CHECK(out.dims == std::vector<std::int64_t>{2, 2});
  CHECK(out.data == std::vector<float>{4, 5, 10, 11});
  // "ba" implicit transposes to "ab": ab of x[b, a] is x transposed.
  out = Einsum("ba", {&a}).at(0);
  CHECK(out.dims == std::vector<std::int64_t>{3, 2});
  CHECK(out.data == std::vector<float>{1, 4, 2, 5, 3, 6});
  const Tensor sq = test::TensorOf("", {2, 2}, {1, 2, 3, 4});
  CHECK(Einsum("ii->i", {&sq}).at(0).data == std::vector<float>{1, 4});
  CHECK(Einsum("ii", {&sq}).at(0).data == std::vector<float>{5});  // the trace
  // "...": x [2, 1, 2] and y [3, 2] broadcast to [2, 3].
  const Tensor x = test::TensorOf("", {2, 1, 2}, {1, 2, 3, 4});
  const Tensor y = test::TensorOf("", {3, 2}, {1, 0, 0, 1, 1, 1});
  out = Einsum("...j,...j->...", {&x, &y}).at(0);
  CHECK(out.dims == std::vector<std::int64_t>{2, 3});
  CHECK(out.data == std::vector<float>{1, 2, 3, 3, 4, 7});
}

TEST_CASE("Einsum refuses malformed equations and inputs that do not fit", "[host_eval]") {
  const Tensor a = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(test::ErrorOf([&] { Einsum("ij,jk->ik", {&a, &a}); }).kind == ErrorKind::kInvalidModel);  // 3 vs 2
  CHECK(test::ErrorOf([&] { Einsum("ijk->i", {&a}); }).kind == ErrorKind::kInvalidModel);
  CHECK(test::ErrorOf([&] { Einsum("ij->ii", {&a}); }).kind == ErrorKind::kUnsupported);
  CHECK(test::ErrorOf([&] { Einsum("i1->i", {&a}); }).kind == ErrorKind::kInvalidModel);
}
