// Elementwise ops as standard-library loops (src/backend/lower/std_math.cc):
// Pow with a constant exponent of several values, Round, Selu and
// ThresholdedRelu with their attributes. Numbers are checked against the same
// functions in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "onnxfuse/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CompileError;
using test::PlanRun;
using test::TensorFrom;

TEST_CASE("Pow with a constant exponent of several values, broadcast along the last axis", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
  const double p[3] = {2, 0.5, -1.5};
  std::vector<double> y;
  for (std::size_t i = 0; i < 6; ++i) y.push_back(std::pow(static_cast<double>(x.data[i]), p[i % 3]));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] p = {2, 0.5, -1.5}) => (float[2,3] y) {
      y = Pow (x, p)
    })",
            {x}, y, 1e-6);
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] p) => (float[2,3] y) {
      y = Pow (x, p)
    })"),
             Catch::Matchers::Contains("input 'p' must be a constant known at build time"));
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, float[2,3] p = {1, 2, 3, 4, 5, 6}) => (float[2,3] y) {
      y = Pow (x, p)
    })"),
             Catch::Matchers::Contains("broadcasts X to a larger shape"));
}

TEST_CASE("standard-library elementwise ops: Round halves to even, Selu and ThresholdedRelu take their attributes",
          "[backend_ops]") {
  Tensor x = TensorFrom({1, 8}, [](std::int64_t i) { return -2.5f + 0.75f * static_cast<float>(i); });  // -2.5 .. 2.75
  std::vector<double> y;
  for (float v : x.data) y.push_back(std::nearbyint(v));
  CHECK(y.front() == -2.0);  // -2.5 rounds to the even -2, not -3
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      y = Round (x)
    })",
            {x}, y, 0);
  y.clear();
  for (float v : x.data) {
    const double selu = 1.5 * (v > 0 ? v : 2.0 * (std::exp(static_cast<double>(v)) - 1));
    y.push_back(selu > 0.8 ? selu : 0.0);
  }
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      s = Selu <alpha = 2.0, gamma = 1.5> (x)
      y = ThresholdedRelu <alpha = 0.8> (s)
    })",
                            {x}, y, 1e-6);
  CHECK(test::StepsStartingWith(fused, "selu ") == 1);
  CHECK(test::StepsStartingWith(fused, "thresholded_relu ") == 1);
}
