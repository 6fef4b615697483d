// Resize (src/backend/lower/ops/resize.cc): on oneDNN's resampling after a
// convolution's blocked layout, on our own loops for the modes oneDNN lacks
// (cubic, align_corners, tf_crop_and_resize, the channel axis), and the
// Resizes refused at build time. Numbers are checked against naive loops in
// double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CompileError;
using test::PlanRun;
using test::RunPlan;
using test::TensorFrom;
using test::Wave;

namespace {

// Keys' cubic convolution kernel (IEEE TASSP 1981) at distance d, A = -0.75.
double Keys(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

}  // namespace

TEST_CASE("Resize on oneDNN: integer nearest upsampling after a Conv, linear half_pixel", "[backend_ops]") {
  // PyTorch's nn.Upsample(scale_factor=2) exports asymmetric + floor: for an
  // integer factor the same input indices as oneDNN's half_pixel rounding.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2,2,1,1] w = {1, 0, 0, 1}) => (float[1,2,6,9] y) {
      c = Conv (x, w)
      s = Constant <value = float[4] {1, 1, 2, 3}> ()
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (c, , s)
    })";
  Tensor x = TensorFrom({1, 2, 3, 3}, Wave);
  std::vector<double> y;
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 6; ++h)
      for (int v = 0; v < 9; ++v) y.push_back(x.data[static_cast<std::size_t>(c * 9 + h / 2 * 3 + v / 3)]);
  CheckBoth(text, {x}, y);

  // Linear, half_pixel, sizes: x = (o + 0.5) * 2 / 3 - 0.5 along W, clamped at the edges.
  Tensor r = TensorFrom({1, 1, 1, 2}, [](std::int64_t i) { return i ? 4.f : 1.f; }, "r");
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,2] r) => (float[1,1,1,3] y) {
      z = Constant <value = int64[4] {1, 1, 1, 3}> ()
      y = Resize <mode = "linear"> (r, , , z)
    })",
            {r}, {1.0, 2.5, 4.0});
  CHECK(StepsStartingWith(run, "resampling ") == 1);
}

TEST_CASE("Resize: a linear resize of an axis of length 1 copies its one value, every output bit-equal to it",
          "[backend_ops]") {
  // Every output is the input in exact arithmetic, so a later TopK sees an
  // exact tie; oneDNN's resampling weighs the value with itself and rounds
  // some outputs 1 ulp off it, so these run on our own loops.
  const float v = -0.9980375f;
  Tensor x = TensorFrom({1, 1, 1, 1}, [&](std::int64_t) { return v; });
  for (const char* transform : {"align_corners", "half_pixel"}) {
    INFO(transform);
    const Graph graph = test::GraphFromText(std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,1,1,1] x) => (float[1,1,4,4] y) {
        s = Constant <value = float[4] {1, 1, 4, 4}> ()
        y = Resize <mode = "linear", coordinate_transformation_mode = ")") + transform + R"("> (x, , s)
      })");
    for (bool fuse : {false, true}) {
      const PlanRun run = RunPlan(graph, fuse, {x});
      for (float got : run.outputs.at(0).data) CHECK(got == v);
      CHECK(StepsStartingWith(run, "resampling ") == 0);
    }
  }
}

TEST_CASE("Resize on our own loops: cubic after a blocked Conv, align_corners, channel axis, extrapolation",
          "[backend_ops]") {
  // Cubic, half_pixel, 2x upsampling of a Conv's output (blocked or
  // channels-last, made plain first): every output is the 2-D sum of the 4x4
  // clamped neighbours weighted by Keys' kernel at their distances.
  const std::int64_t c = 16, h = 3, w = 4;
  std::vector<float> identity(static_cast<std::size_t>(c * c), 0.0f);
  for (std::int64_t i = 0; i < c; ++i) identity[static_cast<std::size_t>(i * c + i)] = 1.0f;
  Tensor x = TensorFrom({1, c, h, w}, Wave);
  std::vector<double> cubic;
  auto at = [&](std::int64_t ch, std::int64_t i, std::int64_t j) {
    i = std::clamp<std::int64_t>(i, 0, h - 1), j = std::clamp<std::int64_t>(j, 0, w - 1);
    return static_cast<double>(x.data[static_cast<std::size_t>((ch * h + i) * w + j)]);
  };
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (int oy = 0; oy < 2 * h; ++oy)
      for (int ox = 0; ox < 2 * w; ++ox) {
        const double sy = (oy + 0.5) / 2 - 0.5, sx = (ox + 0.5) / 2 - 0.5;
        const auto fy = static_cast<std::int64_t>(std::floor(sy)), fx = static_cast<std::int64_t>(std::floor(sx));
        double sum = 0;
        for (std::int64_t i = fy - 1; i <= fy + 2; ++i)
          for (std::int64_t j = fx - 1; j <= fx + 2; ++j)
            sum += Keys(sy - static_cast<double>(i)) * Keys(sx - static_cast<double>(j)) * at(ch, i, j);
        cubic.push_back(sum);
      }
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,16,3,4] x, float[16,16,1,1] w = )" + test::FloatList(identity) + R"() => (float[1,16,6,8] y) {
      c = Conv (x, w)
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Resize <mode = "cubic"> (c, , s)
    })",
                          {x}, cubic);
  CHECK(StepsStartingWith(run, "resize ") == 1);

  // Linear, align_corners, 2x2 -> 3x4: x = o * (in - 1) / (out - 1).
  Tensor q = TensorFrom({1, 1, 2, 2}, [](std::int64_t i) { return static_cast<float>(i * i + 1); }, "q");  // 1 2 / 5 10
  std::vector<double> corners;
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 4; ++ox) {
      const double sy = oy / 2.0, sx = ox / 3.0;
      corners.push_back((1 - sy) * ((1 - sx) * 1 + sx * 2) + sy * ((1 - sx) * 5 + sx * 10));
    }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] q) => (float[1,1,3,4] y) {
      z = Constant <value = int64[4] {1, 1, 3, 4}> ()
      y = Resize <mode = "linear", coordinate_transformation_mode = "align_corners"> (q, , , z)
    })",
            {q}, corners);

  // Nearest (asymmetric, floor) on three axes at once, the channel axis
  // among them: [1,2,2,3] -> [1,3,3,5], three passes through two scratch buffers.
  Tensor n = TensorFrom({1, 2, 2, 3}, [](std::int64_t i) { return static_cast<float>(i); }, "n");
  std::vector<double> nearest;
  for (int oc = 0; oc < 3; ++oc)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 5; ++ox)
        nearest.push_back(static_cast<double>((oc * 2 / 3) * 6 + (oy * 2 / 3) * 3 + ox * 3 / 5));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,3] n) => (float[1,3,3,5] y) {
      z = Constant <value = int64[4] {1, 3, 3, 5}> ()
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (n, , , z)
    })",
            {n}, nearest);

  // tf_crop_and_resize: the crop [0.5, 1.5] of a 1-D row of 3 reaches past its
  // end; those outputs are extrapolation_value.
  Tensor e = TensorFrom({1, 1, 1, 3}, [](std::int64_t i) { return static_cast<float>(10 * (i + 1)); }, "e");  // 10 20 30
  // x = 0.5 * 2 + o * 1.0 * 2 / 4: 1, 1.5, 2, 2.5 (out), 3 (out).
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,3] e) => (float[1,1,1,5] y) {
      roi = Constant <value = float[8] {0, 0, 0, 0.5, 1, 1, 1, 1.5}> ()
      z = Constant <value = int64[4] {1, 1, 1, 5}> ()
      y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = -7.0> (e, roi, , z)
    })",
            {e}, {20.0, 25.0, 30.0, -7.0, -7.0});
}

TEST_CASE("Resize: modes it cannot take are refused at build time, run-time scales or sizes run as a host step",
          "[backend_ops]") {
  std::string error = CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] x) => (float[1,1,4,4] y) {
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Resize <mode = "area"> (x, , s)
    })");
  CHECK_THAT(error, Catch::Contains("Resize") && Catch::Contains("mode 'area'"));

  // Scales computed at run time, the output dims declared: the host
  // evaluator's Resize, after a Conv (its blocked output made plain first).
  // Linear half_pixel, scale 2 along W: x = (o + 0.5) / 2 - 0.5, clamped.
  const std::vector<float> identity = {1, 0, 0, 1};
  Tensor x = TensorFrom({1, 2, 1, 2}, [](std::int64_t i) { return static_cast<float>(4 * i); }, "x");  // 0 4 / 8 12
  Tensor s = test::TensorOf("s", {4}, {1, 1, 1, 2});
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,1,2] x, float[4] s, float[2,2,1,1] w = )" + test::FloatList(identity) + R"() => (float[1,2,1,4] y) {
      c = Conv (x, w)
      y = Resize <mode = "linear"> (c, , s)
    })",
                          {x, s}, {0, 1, 3, 4, 8, 9, 11, 12});
  CHECK(StepsStartingWith(run, "host ") == 1);
  CHECK(StepsStartingWith(run, "resampling ") + StepsStartingWith(run, "resize ") == 0);

  // Run-time sizes (int64): a host step too; cubic with align_corners.
  Tensor r = TensorFrom({1, 1, 1, 2}, [](std::int64_t i) { return i ? 4.f : 1.f; }, "r");
  Tensor n = test::IntTensorOf("n", {4}, {1, 1, 1, 3});
  run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,2] r, int64[4] n) => (float[1,1,1,3] y) {
      y = Resize <mode = "cubic", coordinate_transformation_mode = "align_corners"> (r, , , n)
    })",
                  {r, n}, {1.0, 2.5, 4.0});
  CHECK(StepsStartingWith(run, "host ") == 1);

  // Output dims that depend on the run-time scales: refused, naming the input
  // to make constant.
  error = CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] x, float[4] s) => (float[1,1,H,W] y) {
      y = Resize <mode = "linear"> (x, , s)
    })");
  CHECK_THAT(error, Catch::Contains("(Resize)") && Catch::Contains("input 's' must be a constant known at build time"));
}

TEST_CASE("Upsample-9 with constant scales runs as Resize-10 on oneDNN, Upsample-7 (scales attribute) on the host", "[backend_ops]") {
  // Nearest, scale 2 on H and W: floor(o / 2), integer nearest upsampling oneDNN maps exactly.
  Tensor x = TensorFrom({1, 1, 2, 2}, [](std::int64_t i) { return static_cast<float>(i + 1); }, "x");  // 1 2 / 3 4
  const std::vector<double> doubled = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 9]>
    g (float[1,1,2,2] x) => (float[1,1,4,4] y) {
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Upsample (x, s)
    })",
                          {x}, doubled);
  CHECK(StepsStartingWith(run, "resampling ") == 1);
  run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 8]>
    g (float[1,1,2,2] x) => (float[1,1,4,4] y) {
      y = Upsample <scales = [1.0, 1.0, 2.0, 2.0]> (x)
    })",
                  {x}, doubled);
  CHECK(StepsStartingWith(run, "host ") == 1);
}
