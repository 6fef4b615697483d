// GatherElements, GatherND, Scatter(Elements), ScatterND, OneHot, Compress,
// ReverseSequence and NonZero on the host evaluator
// (src/eval/host_eval_index.cc): ONNX's node tests, then indices
// that are negative or out of range.
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using test::IntAttr;
using test::NodeOf;
using test::StringAttr;

TEST_CASE("the index ops reproduce ONNX's node tests", "[host_eval]") {
  test::CheckNodeTestsOnHost("gather_elements", 3);
  test::CheckNodeTestsOnHost("gathernd", 3);
  test::CheckNodeTestsOnHost("scatter", 6);  // test_scatter_with(out)_axis (Scatter-9) and test_scatter_elements_*
  test::CheckNodeTestsOnHost("scatternd", 3);
  test::CheckNodeTestsOnHost("onehot", 4);
  test::CheckNodeTestsOnHost("compress", 4);
  test::CheckNodeTestsOnHost("reversesequence", 2);
  test::CheckNodeTestsOnHost("nonzero", 1);
}

TEST_CASE("an index out of range is kInvalidModel naming the node, a negative one counts from the end",
          "[host_eval]") {
  const Tensor data = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor negative = test::IntTensorOf("", {2, 1}, {-1, 0});
  auto out = eval::EvalOnHost(NodeOf("GatherElements", {IntAttr("axis", -1)}), {&data, &negative}, 13);
  CHECK(out.at(0).data == std::vector<float>{3, 4});
  const Tensor beyond = test::IntTensorOf("", {2, 1}, {3, 0});
  for (const char* op : {"GatherElements", "ScatterElements"}) {
    const Tensor updates = test::TensorOf("", {2, 1}, {9, 9});
    const auto e = test::ErrorOf([&] {
      eval::EvalOnHost(NodeOf(op, {IntAttr("axis", 1)}), {&data, &beyond, &updates}, 16);
    });
    CHECK(e.kind == ErrorKind::kInvalidModel);
    CHECK_THAT(e.message, Catch::Contains("(" + std::string(op) + "): index 3 is outside [-3, 2]"));
  }
  const Tensor tuple = test::IntTensorOf("", {1, 2}, {1, -4});
  CHECK(test::ErrorOf([&] { eval::EvalOnHost(NodeOf("GatherND"), {&data, &tuple}, 13); }).kind ==
        ErrorKind::kInvalidModel);
}

TEST_CASE("indices larger than data off the axis are kInvalidModel, never a read or write outside data",
          "[host_eval]") {
  // data [1, 3] (a batch of 1 at run time), indices and updates [2, 1]: row 1
  // of indices has no row of data.
  const Tensor data = test::TensorOf("", {1, 3}, {1, 2, 3});
  const Tensor indices = test::IntTensorOf("", {2, 1}, {0, 0});
  const Tensor updates = test::TensorOf("", {2, 1}, {9, 9});
  for (const char* op : {"GatherElements", "ScatterElements"}) {
    const auto e = test::ErrorOf([&] {
      eval::EvalOnHost(NodeOf(op, {IntAttr("axis", 1)}), {&data, &indices, &updates}, 16);
    });
    CHECK(e.kind == ErrorKind::kInvalidModel);
    CHECK_THAT(e.message, Catch::Contains("(" + std::string(op) + "): indices' dim 0 is 2, above data's 1"));
  }
}

TEST_CASE("GatherElements and ScatterElements on a middle axis, indices smaller than data off it", "[host_eval]") {
  // data [2, 3, 4]; indices [2, 2, 3] (-3..2) along axis 1: out[i][j][k] =
  // data[i][idx][k], and the scatter adds upd[i][j][k] at data[i][idx][k].
  std::vector<float> values(24);
  for (int e = 0; e < 24; ++e) values[static_cast<std::size_t>(e)] = static_cast<float>(e) * 0.5f - 3;
  const Tensor data = test::TensorOf("", {2, 3, 4}, values);
  const std::vector<std::int64_t> idx = {2, -1, 0, 1, -3, 2, 0, 0, -2, 1, 2, -1};
  const Tensor indices = test::IntTensorOf("", {2, 2, 3}, idx);
  std::vector<float> upd(12);
  for (int e = 0; e < 12; ++e) upd[static_cast<std::size_t>(e)] = static_cast<float>(e + 1);
  const Tensor updates = test::TensorOf("", {2, 2, 3}, upd);
  std::vector<float> gathered, scattered = values;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) {
        const auto e = static_cast<std::size_t>((i * 2 + j) * 3 + k);
        const std::int64_t row = idx[e] < 0 ? idx[e] + 3 : idx[e];
        const auto at = static_cast<std::size_t>((i * 3 + row) * 4 + k);
        gathered.push_back(values[at]);
        scattered[at] += upd[e];
      }
  const auto out = eval::EvalOnHost(NodeOf("GatherElements", {IntAttr("axis", 1)}), {&data, &indices}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2, 2, 3});
  CHECK(out.at(0).data == gathered);
  const auto sum = eval::EvalOnHost(NodeOf("ScatterElements", {IntAttr("axis", 1), StringAttr("reduction", "add")}),
                                    {&data, &indices, &updates}, 16);
  CHECK(sum.at(0).data == scattered);
}

TEST_CASE("ScatterElements and ScatterND combine duplicates in order by reduction", "[host_eval]") {
  const Tensor data = test::TensorOf("", {4}, {1, 1, 1, 1});
  const Tensor idx = test::IntTensorOf("", {3}, {1, 1, -1});
  const Tensor upd = test::TensorOf("", {3}, {2, 3, 5});
  CHECK(eval::EvalOnHost(NodeOf("ScatterElements", {StringAttr("reduction", "mul")}), {&data, &idx, &upd}, 16)
            .at(0)
            .data == std::vector<float>{1, 6, 1, 5});
  CHECK(eval::EvalOnHost(NodeOf("ScatterElements"), {&data, &idx, &upd}, 13).at(0).data ==
        std::vector<float>{1, 3, 1, 5});
  const Tensor nd_idx = test::IntTensorOf("", {3, 1}, {1, 1, -1});
  CHECK(eval::EvalOnHost(NodeOf("ScatterND", {StringAttr("reduction", "add")}), {&data, &nd_idx, &upd}, 16)
            .at(0)
            .data == std::vector<float>{1, 6, 1, 6});
  const auto e = test::ErrorOf([&] {
    eval::EvalOnHost(NodeOf("ScatterND", {StringAttr("reduction", "max")}), {&data, &nd_idx, &upd}, 18);
  });
  CHECK(e.kind == ErrorKind::kUnsupported);
}

TEST_CASE("OneHot gives off_value rows for indices outside -depth to depth - 1, and NonZero is row-major",
          "[host_eval]") {
  const Tensor idx = test::IntTensorOf("", {3}, {-1, 5, 0});
  const Tensor depth = test::IntTensorOf("", {}, {3});
  const Tensor values = test::TensorOf("", {2}, {0, 7});
  auto out = eval::EvalOnHost(NodeOf("OneHot", {IntAttr("axis", 0)}), {&idx, &depth, &values}, 11);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{3, 3});
  CHECK(out.at(0).data == std::vector<float>{0, 0, 7, 0, 0, 0, 7, 0, 0});
  const Tensor x = test::IntTensorOf("", {2, 2}, {0, 3, 1, 0});
  out = eval::EvalOnHost(NodeOf("NonZero"), {&x}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2, 2});
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{0, 1, 1, 0});
}
