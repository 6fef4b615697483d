// The host evaluator's dispatcher (src/eval/host_eval.cc): Cast, the ops it
// owns itself, and ONNX's node tests run on it alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("Cast and the ops of host_eval.cc reproduce ONNX's node tests", "[host_eval]") {
  // test_cast_*: 10 folders. FLOAT_to_STRING and STRING_to_FLOAT are refused
  // (STRING is no host type). The two BFLOAT16 ones are left out: bfloat16 is
  // no host type either (tensor_io.h StorageTypeOf), and their files hold the
  // bfloat16 bits as UINT16 data (numpy has no bfloat16). The other 6 of each
  // must match.
  // test_castlike_*: the same 10 conversions, the type given by a tensor.
  auto casts = test::NodeTestDirs("cast");
  const auto castlikes = test::NodeTestDirs("castlike");
  REQUIRE(casts.size() == 10);
  REQUIRE(castlikes.size() == 10);
  casts.insert(casts.end(), castlikes.begin(), castlikes.end());
  for (const auto& dir : casts) {
    INFO(dir);
    const std::string result = test::RunNodeTestOnHost(dir);
    if (dir.find("STRING") != std::string::npos) CHECK_THAT(result, Catch::Contains("not supported"));
    else if (dir.find("BFLOAT16") == std::string::npos) CHECK(result == "");
  }
  for (const auto& [name, count] : std::vector<std::pair<std::string, std::size_t>>{
           {"add", 3}, {"sub", 4}, {"mul", 4}, {"div", 4}, {"pow", 14}, {"and", 8}, {"or", 8}, {"equal", 2},
           {"greater", 4}, {"greater_equal", 2}, {"less", 4}, {"less_equal", 2}, {"where", 2}, {"tile", 2},
           {"expand", 2}, {"constantofshape", 3}, {"range", 2}, {"gather", 7}, {"unsqueeze", 8}, {"squeeze", 2},
           {"concat", 12}, {"reshape", 10}, {"flatten", 9}, {"slice", 8}, {"transpose", 7}})
    test::CheckNodeTestsOnHost(name, count);
}

TEST_CASE("Cast follows the spec: bool is x != 0, integers truncate then wrap, float16 rounds to even",
          "[host_eval]") {
  auto cast = [](const Tensor& x, std::int32_t to) {
    return eval::EvalOnHost(test::NodeOf("Cast", {test::IntAttr("to", to)}), {&x}, 13).at(0);
  };
  const Tensor x = test::TensorOf("", {5}, {-1.9f, 0.0f, 0.5f, 300.7f, -129.5f});
  CHECK(cast(x, onnx::TensorProto::BOOL).int_data == std::vector<std::int64_t>{1, 0, 1, 1, 1});
  CHECK(cast(x, onnx::TensorProto::INT8).int_data == std::vector<std::int64_t>{-1, 0, 0, 44, 127});
  CHECK(cast(x, onnx::TensorProto::UINT8).int_data == std::vector<std::int64_t>{255, 0, 0, 44, 127});
  CHECK(cast(x, onnx::TensorProto::INT64).int_data == std::vector<std::int64_t>{-1, 0, 0, 300, -129});
  const Tensor i = test::IntTensorOf("", {3}, {70000, -1, 65535});
  CHECK(cast(i, onnx::TensorProto::INT16).int_data == std::vector<std::int64_t>{4464, -1, -1});
  CHECK(cast(i, onnx::TensorProto::UINT16).int_data == std::vector<std::int64_t>{4464, 65535, 65535});
  CHECK(cast(i, onnx::TensorProto::UINT32).int_data == std::vector<std::int64_t>{70000, 4294967295, 65535});
  // 2049 lies halfway between the float16 neighbours 2048 and 2050: to even, 2048;
  // 2051 between 2050 and 2052: 2052. 65520 and beyond round to infinity.
  const Tensor h = test::TensorOf("", {4}, {2049, 2051, 65519, 65520});
  CHECK(cast(h, onnx::TensorProto::FLOAT16).data == std::vector<float>{2048, 2052, 65504, INFINITY});
  const auto e = test::ErrorOf([&] { cast(x, onnx::TensorProto::STRING); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::Contains("node 'n' (Cast)"));
}

TEST_CASE("Gather copies rows as stored: int64 elements beyond 2^53 exactly, negative indices, an inner axis",
          "[host_eval]") {
  auto gather = [](const Tensor& x, const Tensor& indices, std::int64_t axis) {
    return eval::EvalOnHost(test::NodeOf("Gather", {test::IntAttr("axis", axis)}), {&x, &indices}, 13).at(0);
  };
  // 2^62 + 1 and its neighbours have no exact double.
  const std::int64_t big = (std::int64_t{1} << 62) + 1;
  const Tensor ids = test::IntTensorOf("", {3, 2}, {big, -big, big + 2, 7, -3, big - 4});
  const Tensor rows = gather(ids, test::IntTensorOf("", {2}, {2, -3}), 0);
  CHECK(rows.dims == std::vector<std::int64_t>{2, 2});
  CHECK(rows.int_data == std::vector<std::int64_t>{-3, big - 4, big, -big});
  const Tensor x = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor columns = gather(x, test::IntTensorOf("", {2, 1}, {2, 0}), 1);
  CHECK(columns.dims == std::vector<std::int64_t>{2, 2, 1});
  CHECK(columns.data == std::vector<float>{3, 1, 6, 4});
  const auto e = test::ErrorOf([&] { gather(x, test::IntTensorOf("", {1}, {3}), 1); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("index out of range"));
}

TEST_CASE("Where copies elements as stored: int64 beyond 2^53 exactly, broadcast on every side", "[host_eval]") {
  const std::int64_t big = (std::int64_t{1} << 62) + 1;  // no exact double
  const Tensor column = test::IntTensorOf("", {2, 1}, {big, -big});
  // Where: the condition [1, 3], x a column [2, 1], y one element.
  Tensor condition = test::IntTensorOf("", {1, 3}, {1, 0, 1});
  condition.data_type = onnx::TensorProto::BOOL;
  const Tensor other = test::IntTensorOf("", {}, {big + 2});
  const Tensor chosen = eval::EvalOnHost(test::NodeOf("Where"), {&condition, &column, &other}, 13).at(0);
  CHECK(chosen.dims == std::vector<std::int64_t>{2, 3});
  CHECK(chosen.int_data == std::vector<std::int64_t>{big, big + 2, big, -big, big + 2, -big});
  const Tensor xs = test::TensorOf("", {2, 1}, {1.25f, -2.0f}), ys = test::TensorOf("", {3}, {7, 8, 9});
  const Tensor mixed = eval::EvalOnHost(test::NodeOf("Where"), {&condition, &xs, &ys}, 13).at(0);
  CHECK(mixed.data == std::vector<float>{1.25f, 8, 1.25f, -2.0f, 8, -2.0f});
}


TEST_CASE("EvalAsDeclared narrows each output to the type the graph declares for it", "[host_eval]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 14]>
    g (int8[2] a, int8[2] b) => (int8[2] y) { y = Add (a, b) })");
  const Tensor a = test::IntTensorOf("a", {2}, {100, -100});
  const Tensor b = test::IntTensorOf("b", {2}, {100, -100});
  CHECK(eval::EvalOnHost(graph.node(0), {&a, &b}, graph.opset()).at(0).int_data == std::vector<std::int64_t>{200, -200});
  const std::vector<Tensor> y = eval::EvalAsDeclared(graph, graph.node(0), {&a, &b});
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{-56, 56});  // wrapped to 8 bits
  CHECK(y.at(0).data_type == onnx::TensorProto::INT8);
}
