// Guards around libonnx shape-inference functions that read out of bounds
// (src/load/onnx_guards.h): malformed nodes are refused or typed only,
// well-formed ones still get their shapes.
#include <catch2/catch.hpp>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "load/onnx_guards.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Strict inference, as the loader runs it; throws on the first inconsistency.
// Graph outputs are declared without a shape: inference fills it in.
onnx::ModelProto Infer(const std::string& text) {
  detail::InstallOnnxInferenceGuards();
  auto model = test::ParseModel(text);
  for (auto& output : *model.mutable_graph()->mutable_output())
    output.mutable_type()->mutable_tensor_type()->clear_shape();
  onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  return model;
}

const onnx::TypeProto* TypeOf(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& vi : model.graph().value_info())
    if (vi.name() == name) return &vi.type();
  for (const auto& vi : model.graph().output())
    if (vi.name() == name) return &vi.type();
  return nullptr;
}

}  // namespace

TEST_CASE("a convolution weight of another rank than its input is refused", "[onnx_guards]") {
  CHECK_THROWS_WITH(Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,8] x, float[4,3,3,3] w) => (float c) { c = Conv (x, w) })"),
                    Catch::Contains("the weight has rank 4 but the input has rank 3; they must be equal"));
  CHECK_THROWS_WITH(Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x, float[4] w) => (float c) { c = ConvTranspose (x, w) })"),
                    Catch::Contains("the weight has rank 1; at least 2 is needed"));
  // A well-formed one keeps its inferred shape.
  auto model = Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,8,8] x, float[4,3,3,3] w) => (float c) { c = Conv (x, w) })");
  const auto* c = TypeOf(model, "c");
  REQUIRE(c != nullptr);
  REQUIRE(c->tensor_type().shape().dim_size() == 4);
  CHECK(c->tensor_type().shape().dim(3).dim_value() == 6);
}

TEST_CASE("MaxUnpool with indices of unknown rank gets its element type only", "[onnx_guards]") {
  auto model = Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] x, int64 i) => (float y) { y = MaxUnpool <kernel_shape = [2, 2]> (x, i) })");
  const auto* y = TypeOf(model, "y");
  REQUIRE(y != nullptr);
  CHECK(y->tensor_type().elem_type() == onnx::TensorProto::FLOAT);
  CHECK_FALSE(y->tensor_type().has_shape());
}

TEST_CASE("Reshape keeping a dim the input does not have is refused", "[onnx_guards]") {
  CHECK_THROWS_WITH(Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float y) <int64[3] s = {0, 0, 0}> { y = Reshape (x, s) })"),
                    Catch::Contains("Reshape: shape[2] is 0 (keep the input's dim) but the input has rank 2"));
  auto model = Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float y) <int64[2] s = {0, 3}> { y = Reshape (x, s) })");
  CHECK(TypeOf(model, "y")->tensor_type().shape().dim(0).dim_value() == 2);
}

TEST_CASE("a window op with a stride, dilation or kernel entry below 1 is refused, not divided by", "[onnx_guards]") {
  // The fuzzer's MaxPool with strides [2, 0] stopped the process with SIGFPE
  // inside libonnx's convPoolShapeInference.
  for (const std::string node : {"MaxPool <kernel_shape = [2, 2], strides = [2, 0]> (x)",
                                 "AveragePool <kernel_shape = [2, 0]> (x)",
                                 "LpPool <kernel_shape = [2, 2], strides = [-1, 1]> (x)",
                                 "Conv <strides = [1, 0]> (x, w)", "Conv <dilations = [0, 1]> (x, w)",
                                 "ConvTranspose <strides = [0, 1]> (x, w)"}) {
    INFO(node);
    CHECK_THROWS_WITH(Infer(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,8,8] x, float[3,3,3,3] w) => (float y) { y = )" + node + " }"),
                      Catch::Contains("every entry must be at least 1"));
  }
  auto model = Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,8,8] x) => (float y) { y = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x) })");
  const auto* y = TypeOf(model, "y");
  REQUIRE(y != nullptr);
  REQUIRE(y->tensor_type().shape().dim_size() == 4);
  CHECK(y->tensor_type().shape().dim(3).dim_value() == 4);
}

TEST_CASE("Shape below a node whose inference failed is refused, not dereferenced", "[onnx_guards]") {
  // The fuzzer's opset-18 GroupNormalization (its body starts with Shape(X))
  // below a Sub that cannot broadcast: the Sub's output has no type, and
  // libonnx's Shape propagator read it (SEGV).
  CHECK_THROWS_WITH(Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,3,3] x) => (float y) <float[1,4] c = {1, 1, 1, 1}> {
      d = Sub (x, c)
      s = Shape (d)
      y = Reshape (d, s)
    })"),
                    Catch::Contains("Incompatible dimensions"));
  // With a type, Shape's values still reach Expand (through data propagation).
  auto model = Infer(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float y) {
      s = Shape (x)
      y = Expand (x, s)
    })");
  REQUIRE(TypeOf(model, "y")->tensor_type().shape().dim_size() == 2);
  CHECK(TypeOf(model, "y")->tensor_type().shape().dim(1).dim_value() == 3);
}
