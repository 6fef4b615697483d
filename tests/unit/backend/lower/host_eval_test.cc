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
