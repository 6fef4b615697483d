// Activation ranges from running the model (src/quantize/calibration.h).
#include <catch2/catch.hpp>

#include <vector>

#include "load/loader.h"
#include "quantize/calibration.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::quantize;

namespace {

onnx::ModelProto ReluModel(int n) {
  return LoadModelProto(test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[)" + std::to_string(n) + R"(] x) => (float[)" + std::to_string(n) + R"(] y) {
      r = Relu (x)
      y = Neg (r)
    })"), "relu.onnx").model();
}

}  // namespace

TEST_CASE("min/max calibration takes each activation's extremes over every sample", "[quantize][executor]") {
  const onnx::ModelProto model = ReluModel(3);
  const std::vector<Sample> samples = {{test::TensorOf("x", {3}, {-2.0f, 0.5f, 1.0f})},
                                       {test::TensorOf("x", {3}, {-1.0f, 3.0f, 0.0f})}};
  const auto ranges = Calibrate(model, "relu.onnx", {"x", "r", "y"}, samples, {});
  CHECK(ranges.at("x").low == -2.0);
  CHECK(ranges.at("x").high == 3.0);
  CHECK(ranges.at("r").low == 0.0);
  CHECK(ranges.at("r").high == 3.0);
  CHECK(ranges.at("y").low == -3.0);
  CHECK(ranges.at("y").high == 0.0);
}

TEST_CASE("Percentile calibration cuts the outliers at the histogram's bin edges", "[quantize][executor]") {
  // 0, 1, ..., 9999 and one outlier at 1e6: the range [0, 1e6] in 2048 bins of
  // 488.28125; 99.9% keeps all but 0.05% at each end, so the top is the left
  // edge of bin 20, where 9999 falls (ONNX Runtime's compute_percentile).
  std::vector<float> values;
  for (int i = 0; i < 10000; ++i) values.push_back(static_cast<float>(i));
  values.push_back(1e6f);
  const onnx::ModelProto model = ReluModel(static_cast<int>(values.size()));
  const std::vector<Sample> samples = {{test::TensorOf("x", {static_cast<std::int64_t>(values.size())}, values)}};
  CalibrationOptions options;
  options.method = CalibrationMethod::kPercentile;
  options.percentile = 99.9;
  const auto ranges = Calibrate(model, "relu.onnx", {"x"}, samples, options);
  CHECK(ranges.at("x").low == 0.0);
  CHECK(ranges.at("x").high == Approx(20 * 1e6 / 2048));
  options.method = CalibrationMethod::kMinMax;
  CHECK(Calibrate(model, "relu.onnx", {"x"}, samples, options).at("x").high == 1e6);
}

TEST_CASE("WithOutputs types the values it makes outputs", "[quantize]") {
  const onnx::ModelProto probe = WithOutputs(ReluModel(3), {"r", "y"});
  REQUIRE(probe.graph().output_size() == 2);  // y was already an output
  CHECK(probe.graph().output(1).name() == "r");
  CHECK(probe.graph().output(1).type().tensor_type().shape().dim(0).dim_value() == 3);
  const auto error = test::ErrorOf([&] { WithOutputs(ReluModel(3), {"nothing"}); });
  CHECK(error.kind == ErrorKind::kInvalidModel);
}
