// Reduce* on the host evaluator (src/backend/lower/host_eval_reduce.cc):
// ONNX's node tests of every Reduce* (axes as attribute and, for ReduceSum-13,
// as input; keepdims; noop_with_empty_axes), then ReduceLogSum by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "backend/lower/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("every Reduce* reproduces ONNX's node tests", "[host_eval]") {
  // reduce_log_sum's 13 include reduce_log_sum_exp's 8; reduce_sum's 18 reduce_sum_square's 8.
  for (const auto& [name, count] : std::vector<std::pair<std::string, std::size_t>>{
           {"reduce_max", 8}, {"reduce_min", 8}, {"reduce_sum", 18}, {"reduce_mean", 8}, {"reduce_prod", 8},
           {"reduce_l1", 8}, {"reduce_l2", 8}, {"reduce_log_sum", 13}})
    test::CheckNodeTestsOnHost(name, count);
}

TEST_CASE("ReduceLogSum is the log of the sum over the axes", "[host_eval]") {
  const Tensor x = test::TensorOf("", {2, 2}, {1, 2, 3, 4});
  const auto out = backend::EvalOnHost(test::NodeOf("ReduceLogSum", {test::IntAttr("keepdims", 0)}), {&x}, 13).at(0);
  CHECK(out.dims.empty());
  CHECK(out.data.at(0) == Approx(std::log(10.0)));
}
