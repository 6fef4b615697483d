// Build-time evaluation (src/backend/lower/host_eval.cc) and the nodes whose inputs
// are all known but which it cannot evaluate (Builder::ConstAsAct): both as
// torchvision's detection models use them, checked by running plans.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/lower/host_eval.h"
#include "host_node_tests.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 13]>\n";

}  // namespace

TEST_CASE("Slice's ends of INT64_MAX survive build-time evaluation", "[host_eval]") {
  // torchvision's anchor generator: anchors[:, 2:] with ends 9223372036854775807.
  // Read through a double, INT64_MAX became 2^63, which converted to INT64_MIN:
  // an empty slice, then "shapes [3234,2] and [3234,0] do not broadcast".
  const std::string text = std::string(kHeader) +
                           "g (float[2,2] x) => (float[2,2] y) {\n"
                           "  c = Constant <value = float[2,4] {1, 2, 3, 4, 5, 6, 7, 8}> ()\n"
                           "  s = Constant <value = int64[1] {2}> ()\n"
                           "  e = Constant <value = int64[1] {9223372036854775807}> ()\n"
                           "  a = Constant <value = int64[1] {1}> ()\n"
                           "  t = Slice (c, s, e, a)\n"
                           "  y = Add (x, t)\n"
                           "}";
  const Tensor x = test::TensorFrom({2, 2}, [](std::int64_t i) { return 0.5f * static_cast<float>(i); });
  test::CheckBoth(text, {x}, {3.0, 4.5, 8.0, 9.5}, 0);

}

TEST_CASE("Reduce*, Min, Max, Ceil and Tile of constants fold at build time", "[host_eval]") {
  // torchvision's GeneralizedRCNNTransform: ReduceMax of a Constant image
  // size, Ceil of a division, then a Pad's amounts; it was an internal error
  // ("reads '/transform/Constant_9_output_0' before it is computed").
  const std::string text = std::string(kHeader) +
                           "g (float[2,3] x) => (float[2,3] y) {\n"
                           "  c = Constant <value = float[2,3] {1, -2, 3.5, -4, 5, 0.25}> ()\n"
                           "  m = ReduceMax <axes = [1], keepdims = 1> (c)\n"          // [[3.5], [5]]
                           "  n = ReduceMean <keepdims = 0> (c)\n"                       // 3.75 / 6 = 0.625
                           "  k = Ceil (m)\n"                                            // [[4], [5]]
                           "  r = Constant <value = int64[2] {1, 3}> ()\n"
                           "  o = Constant <value = float[1,1] {0.5}> ()\n"
                           "  t = Tile (o, r)\n"                                         // [[.5, .5, .5]]
                           "  u = Max (k, t)\n"                                          // [[4]*3, [5]*3]
                           "  v = Add (u, n)\n"
                           "  y = Add (x, v)\n"
                           "}";
  const Tensor x = test::TensorFrom({2, 3}, [](std::int64_t i) { return static_cast<float>(i); });
  test::CheckBoth(text, {x}, {4.625, 5.625, 6.625, 8.625, 9.625, 10.625}, 1e-6);

  // ReduceSum-13 takes its axes as an input; keepdims 0 drops them.
  Node node;
  node.op_type = "ReduceSum";
  onnx::AttributeProto keepdims;
  keepdims.set_name("keepdims");
  keepdims.set_type(onnx::AttributeProto::INT);
  keepdims.set_i(0);
  *node.proto.add_attribute() = keepdims;
  const Tensor data = test::IntTensorOf("", {2, 2}, {1, 2, 3, 4});
  const Tensor axes = test::IntTensorOf("", {1}, {0});
  const auto out = backend::EvalOnHost(node, {&data, &axes}, 13);
  CHECK(out.at(0).dims == std::vector<std::int64_t>{2});
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{4, 6});
}

TEST_CASE("a node whose inputs are all constants, which build time cannot evaluate, runs", "[host_eval]") {
  // Softmax has no build-time evaluator: its constant input becomes an
  // activation filled at the start of each inference (Builder::ConstAsAct).
  const std::string text = std::string(kHeader) +
                           "g (float[1,3] x) => (float[1,3] y) {\n"
                           "  c = Constant <value = float[1,3] {0, 1, 2}> ()\n"
                           "  s = Softmax <axis = 1> (c)\n"
                           "  y = Add (x, s)\n"
                           "}";
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  const Tensor x = test::TensorFrom({1, 3}, [](std::int64_t i) { return static_cast<float>(i); });
  test::CheckBoth(text, {x}, {1 / z, 1 + std::exp(1.0) / z, 2 + std::exp(2.0) / z}, 1e-6);
}

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
    return backend::EvalOnHost(test::NodeOf("Cast", {test::IntAttr("to", to)}), {&x}, 13).at(0);
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
