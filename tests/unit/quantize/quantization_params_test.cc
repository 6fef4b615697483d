// The numbers of a QDQ model (src/quantize/quantization_params.h), against
// values worked out by hand from ONNX Runtime's formulas.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "quantize/quantization_params.h"

using namespace onnxfuse::quantize;

TEST_CASE("An activation's range is widened to hold 0 and spread over 255 steps", "[quantize]") {
  const ActivationParams p = ActivationParamsFor(-1.0, 3.0);
  CHECK(p.scale == Approx(4.0 / 255.0));
  CHECK(p.zero_point == 64);  // 1 / (4/255) = 63.75
  const ActivationParams positive = ActivationParamsFor(0.5, 2.0);  // low widened to 0
  CHECK(positive.scale == Approx(2.0 / 255.0));
  CHECK(positive.zero_point == 0);
  const ActivationParams negative = ActivationParamsFor(-2.0, -0.5);  // high widened to 0
  CHECK(negative.scale == Approx(2.0 / 255.0));
  CHECK(negative.zero_point == 255);
  const ActivationParams single = ActivationParamsFor(0.0, 0.0);
  CHECK(single.scale == 1.0f);
  CHECK(single.zero_point == 0);
}

TEST_CASE("A zero point on a half step rounds to even", "[quantize]") {
  // -low / scale = 2.5 exactly: low = -2.5 * s, high = 252.5 * s, s = 1/64.
  const ActivationParams p = ActivationParamsFor(-2.5 / 64.0, 252.5 / 64.0);
  CHECK(p.scale == 1.0f / 64.0f);
  CHECK(p.zero_point == 2);
}

TEST_CASE("Weights are quantized per channel along the axis, symmetric", "[quantize]") {
  // [2, 3]: per row (axis 0) and per column (axis 1).
  const std::vector<float> w = {1.0f, -0.6f, 0.25f, 0.0f, 2.2f, -4.0f};
  const QuantizedWeights rows = QuantizeWeights(w, {2, 3}, 0, 127);
  REQUIRE(rows.scales.size() == 2);
  CHECK(rows.scales[0] == Approx(1.0 / 127));
  CHECK(rows.scales[1] == Approx(4.0 / 127));
  CHECK(rows.values == std::vector<std::int8_t>{127, -76, 32, 0, 70, -127});  // -76.2, 31.75, 69.85
  const QuantizedWeights columns = QuantizeWeights(w, {2, 3}, 1, 63);
  REQUIRE(columns.scales.size() == 3);
  CHECK(columns.scales[0] == Approx(1.0 / 63));
  CHECK(columns.scales[1] == Approx(2.2 / 63));
  CHECK(columns.scales[2] == Approx(4.0 / 63));
  CHECK(columns.values == std::vector<std::int8_t>{63, -17, 4, 0, 63, -63});  // -17.18, 3.9375
}

TEST_CASE("An all-zero channel gets scale 1", "[quantize]") {
  const QuantizedWeights q = QuantizeWeights({0.0f, 0.0f, 3.0f, -3.0f}, {2, 2}, 0, 127);
  CHECK(q.scales[0] == 1.0f);
  CHECK(q.values == std::vector<std::int8_t>{0, 0, 127, -127});
}

TEST_CASE("A bias is int32 at input scale times weight scale, saturating", "[quantize]") {
  const QuantizedBias q = QuantizeBias({1.0f, -0.3f, 1e30f}, 0.5f, {0.01f, 0.1f, 1e-10f});
  CHECK(q.scales[0] == 0.5f * 0.01f);
  CHECK(q.values[0] == 200);
  CHECK(q.values[1] == -6);
  CHECK(q.values[2] == std::numeric_limits<std::int32_t>::max());
}
