// Opset 1-6 to 9 (src/load/up_conversion.cc): what ONNX's version converter
// needs first, the PRelu slope fix, and the errors.
#include <catch2/catch.hpp>

#include "conversion_step.h"
#include "load/conversion_steps.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

OpsetConversion Up(onnx::ModelProto& model) { return test::RunConversionStep(load::ConvertUp, model, "old.onnx"); }

std::vector<std::string> InputNames(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& i : model.graph().input()) names.push_back(i.name());
  return names;
}

}  // namespace

TEST_CASE("an old model reaches opset 9: the record says so", "[up_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 3, opset_import: ["" : 6]>
    g (float[2,3] x) => (float[2,3] y) { r = Relu (x)  y = Neg (r) })");
  auto record = Up(model);
  CHECK(record.from_opset == 6);
  CHECK(record.to_opset == 9);
  CHECK(record.to_ir == model.ir_version());
  CHECK(load::DefaultOpset(model) == 9);
  REQUIRE(model.graph().node_size() == 2);
  CHECK(model.graph().node(0).op_type() == "Relu");
}

TEST_CASE("initializers listed for the converter are unlisted again from IR 4", "[up_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 4, opset_import: ["" : 6]>
    g (float[2,3] x) => (float[2,3] y) <float[3] b = {1, 2, 3}> { y = Add <broadcast = 1> (x, b) })");
  REQUIRE(InputNames(model) == std::vector<std::string>{"x"});
  Up(model);
  CHECK(InputNames(model) == std::vector<std::string>{"x"});
  REQUIRE(model.graph().node_size() == 1);
  CHECK(model.graph().node(0).attribute_size() == 0);  // Add-7 broadcasts numpy-style: no attribute
}

TEST_CASE("PRelu-6's per-channel slope [C] becomes [C, 1, ...]", "[up_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 3, opset_import: ["" : 6]>
    g (float[2,3,4] x, float[3] slope) => (float[2,3,4] y) <float[3] slope = {0.1, 0.2, 0.3}> {
      y = PRelu (x, slope)
    })");
  Up(model);
  const auto& slope = model.graph().initializer(0);
  CHECK(std::vector<std::int64_t>(slope.dims().begin(), slope.dims().end()) == std::vector<std::int64_t>{3, 1});
  // IR 3 lists it as an input too: its declared shape follows.
  const auto& input = model.graph().input(1);
  REQUIRE(input.name() == "slope");
  CHECK(input.type().tensor_type().shape().dim_size() == 2);
  CHECK(input.type().tensor_type().shape().dim(1).dim_value() == 1);
}

TEST_CASE("a model the checker refuses stays an invalid model", "[up_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 3, opset_import: ["" : 6]>
    g (float[2] x) => (float[2] y) { y = Relu (x, x) })");
  auto e = test::ErrorOf([&] { Up(model); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::StartsWith("old.onnx: the ONNX checker refuses it: "));
  CHECK(e.message.find('\n') == std::string::npos);
}
