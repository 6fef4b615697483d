// The accuracy report's measures (src/quantize/accuracy.h).
#include <catch2/catch.hpp>

#include <map>

#include "quantize/accuracy.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::quantize;

TEST_CASE("Accuracy: max and mean absolute error over every sample, top-1 agreement of [N, C] outputs", "[quantize]") {
  AccuracyMeter meter;
  // Sample 1: rows (arg-max 2, 0) against (2, 1); sample 2: (1) against (1).
  meter.Add({{"scores", test::TensorOf("scores", {2, 3}, {0.1f, 0.2f, 0.9f, 0.8f, 0.1f, 0.0f})},
             {"feature", test::TensorOf("feature", {4}, {1.0f, -2.0f, 3.0f, 0.0f})}},
            {{"scores", test::TensorOf("scores", {2, 3}, {0.1f, 0.3f, 0.9f, 0.4f, 0.5f, 0.0f})},
             {"feature", test::TensorOf("feature", {4}, {1.0f, -2.5f, 3.0f, 0.0f})}});
  meter.Add({{"scores", test::TensorOf("scores", {1, 3}, {0.0f, 1.0f, 0.5f})},
             {"feature", test::TensorOf("feature", {4}, {0.0f, 0.0f, 0.0f, 4.0f})}},
            {{"scores", test::TensorOf("scores", {1, 3}, {0.0f, 1.0f, 0.5f})},
             {"feature", test::TensorOf("feature", {4}, {0.0f, 0.0f, 0.0f, 4.0f})}});
  const std::vector<OutputAccuracy> result = meter.Result();
  REQUIRE(result.size() == 2);
  const OutputAccuracy& feature = result[0];  // by name
  CHECK(feature.name == "feature");
  CHECK(feature.max_abs_error == Approx(0.5));
  CHECK(feature.mean_abs_error == Approx(0.5 / 8));
  CHECK(feature.max_abs_float == Approx(4.0));
  CHECK(feature.top1_agreement == -1);
  const OutputAccuracy& scores = result[1];
  CHECK(scores.max_abs_error == Approx(0.4));
  CHECK(scores.mean_abs_error == Approx((0.1 + 0.4 + 0.4) / 9));
  CHECK(scores.rows == 3);
  CHECK(scores.top1_agreement == Approx(2.0 / 3));
}
