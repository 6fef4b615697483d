// The conversion driver (load/opset_conversion.h): which models go up,
// which go down, which are left alone, and the record of what happened.
#include <catch2/catch.hpp>

#include "load/opset_conversion.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

onnx::ModelProto Relu(int ir, int opset) {
  return test::ParseModel("<ir_version: " + std::to_string(ir) + ", opset_import: [\"\" : " + std::to_string(opset) +
                          "]> g (float[2] x) => (float[2] y) { y = Relu (x) }");
}

}  // namespace

TEST_CASE("a model in the working range is left byte for byte", "[opset_conversion]") {
  for (int opset : {7, 13, 17}) {
    auto model = Relu(8, opset);
    const auto before = model.SerializeAsString();
    auto record = ConvertToWorkingOpset(model, "m.onnx");
    CHECK(model.SerializeAsString() == before);
    CHECK(record.from_opset == opset);
    CHECK(record.to_opset == opset);
    CHECK(record.from_ir == 8);
    CHECK(record.to_ir == 8);
    CHECK_FALSE(record.Converted());
    CHECK(record.nodes.empty());
  }
}

TEST_CASE("opset 18-23 and IR 9-10 go down to opset 17 and IR 8", "[opset_conversion]") {
  auto model = test::ParseModel(R"(
    <ir_version: 9, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) <int64[1] axes = {1}> { y = ReduceMean <keepdims = 0> (x, axes) })");
  auto record = ConvertToWorkingOpset(model, "m.onnx");
  CHECK(record.from_opset == 18);
  CHECK(record.from_ir == 9);
  CHECK(record.to_opset == 17);
  CHECK(record.to_ir == 8);
  CHECK(record.Converted());
  REQUIRE(record.nodes.size() == 1);
  CHECK(record.nodes[0].op_type == "ReduceMean");
  CHECK(model.opset_import(0).version() == 17);
  CHECK(model.ir_version() == 8);

  auto new_ir_only = Relu(10, 17);
  auto ir_record = ConvertToWorkingOpset(new_ir_only, "m.onnx");
  CHECK(ir_record.from_opset == 17);
  CHECK(ir_record.to_opset == 17);
  CHECK(ir_record.to_ir == 8);
  CHECK(new_ir_only.ir_version() == 8);
  CHECK(ir_record.Converted());
}

TEST_CASE("opset 1-6 go up to opset 9 with ONNX's version converter", "[opset_conversion]") {
  auto model = Relu(3, 6);
  auto record = ConvertToWorkingOpset(model, "old.onnx");
  CHECK(record.from_opset == 6);
  CHECK(record.to_opset == 9);
  CHECK(model.opset_import(0).version() == 9);
  CHECK(record.Converted());
}

TEST_CASE("opsets and IR versions outside every range are left to the loader", "[opset_conversion]") {
  for (auto [ir, opset] : {std::pair{8, 24}, std::pair{11, 13}, std::pair{8, 0}}) {
    auto model = Relu(ir, opset);
    const auto before = model.SerializeAsString();
    auto record = ConvertToWorkingOpset(model, "m.onnx");
    CHECK(model.SerializeAsString() == before);
    CHECK_FALSE(record.Converted());
  }
}
