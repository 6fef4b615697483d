// Each product's own quantization error (src/quantize/layer_error.h),
// against the arithmetic done by hand in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "load/loader.h"
#include "quantize/layer_error.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::quantize;

TEST_CASE("A layer's error is its twin's relative RMS difference, on its own float input", "[quantize][executor]") {
  // y = (x * 3) . W: the MatMul reads the Mul's output, quantized at the
  // given parameters; the Mul stays float.
  const std::vector<float> w = {0.9f, -0.2f, 0.33f, 0.7f, -0.45f, 0.1f};  // [3, 2]
  const onnx::ModelProto model = LoadModelProto(test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x) => (float[1,2] y) <float[3,2] w = {0.9, -0.2, 0.33, 0.7, -0.45, 0.1}, float k = {3.0}> {
      a = Mul (x, k)
      y = MatMul (a, w)
    })"), "layer.onnx").model();
  const QuantizationSites sites = FindQuantizationSites(model.graph());
  REQUIRE(sites.anchors.size() == 1);
  const ActivationParams a_params{0.02f, 100};
  const std::vector<std::vector<float>> xs = {{0.1f, -0.25f, 0.4f}, {-0.5f, 0.3f, 0.05f}};
  std::vector<Sample> samples;
  for (const auto& x : xs) samples.push_back({test::TensorOf("x", {1, 3}, x)});
  const std::vector<LayerError> errors = MeasureLayerErrors(model, "layer.onnx", sites, {{"a", a_params}}, 127, samples);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].op_type == "MatMul");
  CHECK(errors[0].node == sites.anchors[0].name);

  // By hand: W per column, symmetric 127; a quantized at scale 0.02, zero point 100.
  double difference = 0, reference = 0;
  for (const auto& x : xs) {
    for (int j = 0; j < 2; ++j) {
      const double column_max = std::max({std::fabs(w[static_cast<std::size_t>(j)]), std::fabs(w[static_cast<std::size_t>(2 + j)]),
                                          std::fabs(w[static_cast<std::size_t>(4 + j)])});
      const float scale = static_cast<float>(column_max) / 127.0f;
      double y = 0, yq = 0;
      for (int i = 0; i < 3; ++i) {
        const float a = x[static_cast<std::size_t>(i)] * 3.0f;
        const float qa = (std::clamp(std::nearbyint(a / a_params.scale) + 100.0f, 0.0f, 255.0f) - 100.0f) * a_params.scale;
        const float wij = w[static_cast<std::size_t>(i * 2 + j)];
        const float qw = std::nearbyint(wij / scale) * scale;
        y += static_cast<double>(a) * wij;
        yq += static_cast<double>(qa) * qw;
      }
      difference += (yq - y) * (yq - y);
      reference += y * y;
    }
  }
  const double expected = std::sqrt(difference / reference);
  CHECK(expected > 1e-4);  // the case quantizes something
  CHECK(errors[0].relative_rms == Approx(expected).epsilon(1e-4));
}
