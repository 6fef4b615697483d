// PRelu (src/backend/lower/ops/eltwise.cc, EmitPrelu): a prelu primitive, its slope
// per channel after a Conv's layout or broadcast along the last axis. Numbers
// are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("PRelu: a prelu primitive, per-channel after a Conv's layout, or broadcast along the last axis", "[backend_ops]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0},
       float[2,1,1] slope = {0.1, -2.0}) => (float[1,2,3,3] y) {
      c = Conv (x, w)
      y = PRelu (c, slope)
    })";
  Tensor x = TensorFrom({1, 1, 4, 4}, Wave);
  const float w[2][4] = {{0.5f, -0.25f, 0.75f, 1.0f}, {-0.5f, 0.25f, 0.125f, -1.0f}}, slope[2] = {0.1f, -2.0f};
  std::vector<double> y;
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 3; ++h)
      for (int v = 0; v < 3; ++v) {
        double acc = 0;
        for (int kh = 0; kh < 2; ++kh)
          for (int kw = 0; kw < 2; ++kw) acc += static_cast<double>(w[o][kh * 2 + kw]) * x.data[static_cast<std::size_t>((h + kh) * 4 + v + kw)];
        y.push_back(acc < 0 ? slope[o] * acc : acc);
      }
  // Not a post-op: oneDNN 2.6 runs convolutions with a prelu post-op on its reference kernel only.
  PlanRun fused = CheckBoth(text, {x}, y);
  CHECK(fused.stats.kernels - fused.stats.reorders == 2);

  // Broadcast along the last axis, slope a run-time input.
  Tensor a = TensorFrom({2, 3}, [](std::int64_t i) { return static_cast<float>(i) - 2.5f; }, "a");
  Tensor s = TensorFrom({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i + 1); }, "s");
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[3] s) => (float[2,3] y) {
      y = PRelu (a, s)
    })",
            {a, s}, {-2.5 * 0.5, -1.5 * 1.0, -0.5 * 1.5, 0.5, 1.5, 2.5});
}
