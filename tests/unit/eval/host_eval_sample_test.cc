// The sample family on the host (src/eval/host_eval_sample.cc and
// host_eval_window.cc): EvalOnHost over every ONNX node test of Resize,
// Upsample, GridSample, MaxPool with Indices or uint8 data, MaxUnpool,
// RoiAlign and LRN (Debian's libonnx-testdata, expected outputs at the
// backend-test tolerance), then Resize, Upsample and GridSample edge cases
// worked out by hand from ONNX Operators.md. The window ops' hand cases are
// in host_eval_window_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "onnxfuse/error.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using eval::EvalOnHost;

namespace {

// Runs node 0 of `g` on `inputs` (nullptr: omitted).
Tensor Eval(const Graph& g, const std::vector<const Tensor*>& inputs) {
  return EvalOnHost(g.node(0), inputs, g.opset()).at(0);
}

}  // namespace

TEST_CASE("every ONNX node test of the sample family evaluates to its expected outputs", "[host_eval_sample]") {
  // libonnx-testdata 1.12: 23 Resize, 1 Upsample, 8 GridSample, 2 MaxPool with
  // Indices, 1 uint8 MaxPool, 2 MaxUnpool, 2 RoiAlign, 2 LRN (41 in all).
  test::CheckNodeTestsOnHost("resize", 23);
  test::CheckNodeTestsOnHost("upsample", 1);
  test::CheckNodeTestsOnHost("gridsample", 8);
  test::CheckNodeTestsOnHost("maxpool_with_argmax", 2);
  test::CheckNodeTestsOnHost("maxpool_2d_uint8", 1);
  test::CheckNodeTestsOnHost("maxunpool", 2);
  test::CheckNodeTestsOnHost("roialign", 2);
  test::CheckNodeTestsOnHost("lrn", 2);
}

TEST_CASE("Resize nearest_mode: ties at .5 go down or up, Resize-10 floors upsampling and ceils downsampling",
          "[host_eval_sample]") {
  // asymmetric, scale 2: x = y / 2 = 0, 0.5, 1, 1.5; indices past the end clamp.
  const Tensor x = test::TensorOf("x", {2}, {10, 20});
  const Tensor scales = test::TensorOf("s", {1}, {2});
  auto nearest = [&](const std::string& mode) {
    Graph g = test::OneNodeGraph("float[2] x, float[1] s", "float[4] y",
                      "y = Resize <mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"" +
                          mode + "\"> (x, , s)");
    return eval::HostValues(Eval(g, {&x, nullptr, &scales}));
  };
  CHECK(nearest("round_prefer_floor") == std::vector<double>{10, 10, 20, 20});
  CHECK(nearest("round_prefer_ceil") == std::vector<double>{10, 20, 20, 20});
  CHECK(nearest("floor") == std::vector<double>{10, 10, 20, 20});
  CHECK(nearest("ceil") == std::vector<double>{10, 20, 20, 20});

  // Resize-10, scale 0.6 of 5: out floor(3.0) = 3, x = 0, 1.67, 3.33, ceil -> 0, 2, 4.
  const Tensor five = test::TensorOf("x", {5}, {1, 2, 3, 4, 5});
  const Tensor down = test::TensorOf("s", {1}, {0.6f});
  Graph g10 = test::OneNodeGraph("float[5] x, float[1] s", "float[3] y", "y = Resize <mode = \"nearest\"> (x, s)", 10);
  CHECK(eval::HostValues(Eval(g10, {&five, &down})) == std::vector<double>{1, 3, 5});
  // Upsampling (scale 2.5 of 2): x = y / 2.5 = 0, 0.4, 0.8, 1.2, 1.6, floor.
  const Tensor up = test::TensorOf("s", {1}, {2.5f});
  Graph up10 = test::OneNodeGraph("float[2] x, float[1] s", "float[5] y", "y = Resize <mode = \"nearest\"> (x, s)", 10);
  CHECK(eval::HostValues(Eval(up10, {&x, &up})) == std::vector<double>{10, 10, 10, 20, 20});
}

TEST_CASE("Resize coordinate transformations at an output length of 1, and N-linear over every axis",
          "[host_eval_sample]") {
  const Tensor x = test::TensorOf("x", {4}, {1, 2, 4, 8});
  const Tensor one = test::IntTensorOf("n", {1}, {1});
  auto linear = [&](const std::string& transform) {
    Graph g = test::OneNodeGraph("float[4] x, int64[1] n", "float[1] y",
                      "y = Resize <mode = \"linear\", coordinate_transformation_mode = \"" + transform +
                          "\"> (x, , , n)");
    return eval::HostValues(Eval(g, {&x, nullptr, nullptr, &one}))[0];
  };
  CHECK(linear("half_pixel") == Approx(3.0));        // x = 0.5 * 4 - 0.5 = 1.5: between 2 and 4
  CHECK(linear("pytorch_half_pixel") == Approx(1));  // length 1: x = 0
  CHECK(linear("align_corners") == Approx(1));       // length 1: x = 0
  CHECK(linear("asymmetric") == Approx(1));          // x = 0
  CHECK(linear("tf_half_pixel_for_nn") == Approx(4));    // x = 0.5 * 4 = 2

  // Bilinear over both axes of a 2-D tensor, align_corners 2 x 2 -> 3 x 3:
  // the centre is the mean of the four corners, the edges' midpoints the
  // means of two.
  const Tensor square = test::TensorOf("x", {2, 2}, {1, 3, 5, 11});
  const Tensor three = test::IntTensorOf("n", {2}, {3, 3});
  Graph g = test::OneNodeGraph("float[2,2] x, int64[2] n", "float[3,3] y",
                    "y = Resize <mode = \"linear\", coordinate_transformation_mode = \"align_corners\"> (x, , , n)");
  test::CheckValues(Eval(g, {&square, nullptr, nullptr, &three}), {1, 2, 3, 3, 5, 7, 5, 8, 11}, 1e-6);
}

TEST_CASE("Resize cubic with exclude_outside renormalizes the weights left inside, tf_crop_and_resize extrapolates",
          "[host_eval_sample]") {
  // half_pixel, scale 2, A = -0.5: y = 0 maps to x = -0.25, taps -2..1 at
  // distances 1.75, 0.75, 0.25, 1.25; the two outside are dropped and
  // W(0.25) = 0.8671875, W(1.25) = -0.0703125 renormalized by their sum 0.796875.
  const Tensor x = test::TensorOf("x", {4}, {1, 2, 3, 4});
  const Tensor scales = test::TensorOf("s", {1}, {2});
  Graph g = test::OneNodeGraph("float[4] x, float[1] s", "float[8] y",
                    "y = Resize <mode = \"cubic\", cubic_coeff_a = -0.5, exclude_outside = 1> (x, , s)");
  const auto y = eval::HostValues(Eval(g, {&x, nullptr, &scales}));
  CHECK(y[0] == Approx((0.8671875 * 1 - 0.0703125 * 2) / 0.796875));
  // Without exclude_outside the outside taps read the edge (weights sum to 1).
  Graph edge = test::OneNodeGraph("float[4] x, float[1] s", "float[8] y",
                       "y = Resize <mode = \"cubic\", cubic_coeff_a = -0.5> (x, , s)");
  const double w175 = ((-0.5 * 1.75 + 2.5) * 1.75 - 4) * 1.75 + 2, w075 = (1.5 * 0.75 - 2.5) * 0.75 * 0.75 + 1;
  CHECK(eval::HostValues(Eval(edge, {&x, nullptr, &scales}))[0] == Approx((w175 + w075 + 0.8671875) * 1 - 0.0703125 * 2));

  // roi [0.5, 1.5] of 3 samples, 3 outputs: x = 1 + y = 1, 2, 3; 3 is past the last sample.
  const Tensor three = test::TensorOf("x", {3}, {10, 20, 30});
  const Tensor roi = test::TensorOf("r", {2}, {0.5f, 1.5f});
  const Tensor sizes = test::IntTensorOf("n", {1}, {3});
  Graph crop = test::OneNodeGraph("float[3] x, float[2] r, int64[1] n", "float[3] y",
                       "y = Resize <mode = \"linear\", coordinate_transformation_mode = \"tf_crop_and_resize\", "
                       "extrapolation_value = -7.0> (x, r, , n)");
  CHECK(eval::HostValues(Eval(crop, {&three, &roi, nullptr, &sizes})) == std::vector<double>{20, 30, -7});
}

TEST_CASE("Resize output dims come from floor(in * scale) in float, bad scales and sizes are refused",
          "[host_eval_sample]") {
  const Tensor x = test::TensorOf("x", {1, 1, 4, 4}, std::vector<float>(16, 1.0f));
  const Tensor scales = test::TensorOf("s", {4}, {1, 1, 0.6f, 1.5f});
  Graph g = test::OneNodeGraph("float[1,1,4,4] x, float[4] s", "float[1,1,2,6] y", "y = Resize (x, , s)");
  CHECK(Eval(g, {&x, nullptr, &scales}).dims == std::vector<std::int64_t>{1, 1, 2, 6});

  const Tensor sizes = test::IntTensorOf("n", {4}, {1, 1, 2, 2});
  CHECK_THROWS_WITH(Eval(g, {&x, nullptr, &scales, &sizes}), Catch::Contains("scales and sizes are both given"));
  CHECK_THROWS_WITH(Eval(g, {&x, nullptr, nullptr}), Catch::Contains("neither scales nor sizes"));
  const Tensor short_scales = test::TensorOf("s", {2}, {2, 2});
  CHECK_THROWS_WITH(Eval(g, {&x, nullptr, &short_scales}), Catch::Contains("scales has 2 values for an input of rank 4"));
  try {
    Eval(g, {&x, nullptr, &short_scales});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    CHECK_THAT(e.what(), Catch::Contains("(Resize)"));
  }
}

TEST_CASE("Upsample-7 (scales attribute) and Upsample-9 (scales input): asymmetric, nearest floors",
          "[host_eval_sample]") {
  const Tensor x = test::TensorOf("x", {1, 2}, {1, 3});
  Graph g7 = test::OneNodeGraph("float[1,2] x", "float[1,6] y", "y = Upsample <scales = [1.0, 3.0]> (x)", 8);
  CHECK(eval::HostValues(Eval(g7, {&x})) == std::vector<double>{1, 1, 1, 3, 3, 3});
  // linear: x = y / 2 = 0, 0.5, 1, 1.5, the last clamped to the edge.
  const Tensor scales = test::TensorOf("s", {2}, {1, 2});
  Graph g9 = test::OneNodeGraph("float[1,2] x, float[2] s", "float[1,4] y", "y = Upsample <mode = \"linear\"> (x, s)", 9);
  test::CheckValues(Eval(g9, {&x, &scales}), {1, 2, 3, 3}, 1e-6);
}

TEST_CASE("GridSample: padding modes, reflection far outside, nearest rounds half to even", "[host_eval_sample]") {
  // One row of 4 pixels; align_corners 0: x = ((g + 1) * 4 - 1) / 2.
  const Tensor x = test::TensorOf("x", {1, 1, 1, 4}, {10, 20, 30, 40});
  auto sample = [&](const std::string& attrs, const std::vector<float>& gx) {
    std::vector<float> grid;
    for (float v : gx) grid.push_back(v), grid.push_back(0);  // y = 0: row 0 of the one-row image
    const auto n = static_cast<std::int64_t>(gx.size());
    const Tensor t = test::TensorOf("g", {1, 1, n, 2}, grid);
    Graph g = test::OneNodeGraph("float[1,1,1,4] x, float[1,1," + std::to_string(n) + ",2] g",
                      "float[1,1,1," + std::to_string(n) + "] y", "y = GridSample <" + attrs + "> (x, g)", 16);
    return eval::HostValues(Eval(g, {&x, &t}));
  };
  // zeros: g = -1 is x = -0.5, half the first pixel and half 0; g = -0.5 is x = 0.5.
  const auto zeros = sample("mode = \"bilinear\"", {-1.0f, -0.5f});
  CHECK(zeros[0] == Approx(5));
  CHECK(zeros[1] == Approx(15));
  // border: g = -2 is x = -2.5, clamped to 0.
  CHECK(sample("padding_mode = \"border\"", {-2.0f})[0] == Approx(10));
  // reflection by -0.5 and 3.5: x = -2.5 -> 1.5 (between 20 and 30); x = 9.5 lies 10 past
  // -0.5: two reflections (spans of 4) bring it back, 2 more -> 1.5.
  const auto reflected = sample("padding_mode = \"reflection\"", {-2.0f, 4.0f});
  CHECK(reflected[0] == Approx(25));
  CHECK(reflected[1] == Approx(25));
  // nearest: x = 0.5 rounds to 0, x = 1.5 to 2 (half to even).
  CHECK(sample("mode = \"nearest\"", {-0.5f, 0.0f}) == std::vector<double>{10, 30});
  // align_corners: g = -1 and 1 are the centres of the first and last pixels.
  CHECK(sample("align_corners = 1", {-1.0f, 1.0f, 0.0f}) == std::vector<double>{10, 40, 25});
  // A grid whose batch differs from X's is refused, naming the node.
  const Tensor bad = test::TensorOf("g", {2, 1, 1, 2}, {0, 0, 0, 0});
  Graph g = test::OneNodeGraph("float[1,1,1,4] x, float[2,1,1,2] g", "float[1,1,1,1] y", "y = GridSample (x, g)", 16);
  CHECK_THROWS_WITH(Eval(g, {&x, &bad}), Catch::Contains("(GridSample)") && Catch::Contains("grid of shape"));
}
