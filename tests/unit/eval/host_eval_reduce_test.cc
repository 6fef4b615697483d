// Reduce* on the host evaluator (src/eval/host_eval_reduce.cc):
// ONNX's node tests of every Reduce* (axes as attribute and, for ReduceSum-13,
// as input; keepdims; noop_with_empty_axes), then ReduceLogSum by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "eval/host_eval.h"
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
  const auto out = eval::EvalOnHost(test::NodeOf("ReduceLogSum", {test::IntAttr("keepdims", 0)}), {&x}, 13).at(0);
  CHECK(out.dims.empty());
  CHECK(out.data.at(0) == Approx(std::log(10.0)));
}

TEST_CASE("ReduceSum-13 takes its axes as an input, keepdims 0 drops them", "[host_eval]") {
  Node node;
  node.op_type = "ReduceSum";
  onnx::AttributeProto keepdims;
  keepdims.set_name("keepdims");
  keepdims.set_type(onnx::AttributeProto::INT);
  keepdims.set_i(0);
  *node.proto.add_attribute() = keepdims;
  const Tensor data = test::IntTensorOf("", {2, 2}, {1, 2, 3, 4});
  const Tensor axes = test::IntTensorOf("", {1}, {0});
  const auto out = eval::EvalOnHost(node, {&data, &axes}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2});
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{4, 6});
}
