// InstanceNormalization (src/backend/lower/ops/normalization.cc): our
// InstanceNorm kernel over the instances, after a Conv's layout (the op's
// node tests are opset 6, below the loader's range). Numbers are checked
// against naive loops in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/lower/core/builder.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::TensorFrom;
using test::Wave;

TEST_CASE("InstanceNormalization normalizes each (n, c) over its spatial dims", "[backend_ops]") {
  // After a Conv, so that the fused plan reads a convolution's layout.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,2,3] x, float[3,3,1,1] w = {1, 0, 0, 0, 1, 0, 0, 0, 1}, float[3] s = {1.5, -0.5, 2.0},
       float[3] b = {0.1, 0.2, -0.3}) => (float[2,3,2,3] y) {
      c = Conv (x, w)
      y = InstanceNormalization <epsilon = 0.01> (c, s, b)
    })";
  Tensor x = TensorFrom({2, 3, 2, 3}, Wave);
  const double scale[3] = {1.5, -0.5, 2.0}, shift[3] = {0.1, 0.2, -0.3};
  std::vector<double> y;
  for (int nc = 0; nc < 6; ++nc) {
    double mean = 0, var = 0;
    for (int i = 0; i < 6; ++i) mean += x.data[static_cast<std::size_t>(nc * 6 + i)] / 6.0;
    for (int i = 0; i < 6; ++i) var += std::pow(x.data[static_cast<std::size_t>(nc * 6 + i)] - mean, 2) / 6.0;
    for (int i = 0; i < 6; ++i)
      y.push_back((x.data[static_cast<std::size_t>(nc * 6 + i)] - mean) / std::sqrt(var + 0.01) * scale[nc % 3] + shift[nc % 3]);
  }
  const test::PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
  CHECK(test::StepsStartingWith(fused, "instance_norm ") == 1);
}
