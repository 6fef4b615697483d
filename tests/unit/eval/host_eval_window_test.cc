// MaxPool with Indices and on integers, MaxUnpool, RoiAlign and LRN on the
// host (src/eval/host_eval_window.cc), called directly on nodes of
// small models; expected values worked out by hand from ONNX Operators.md
// (MaxPool-12, MaxUnpool-11, RoiAlign-16, LRN-13). The ONNX node tests of
// these ops run in host_eval_sample_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "common/omp_team.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "onnxfuse/error.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using eval::EvalOnHost;

TEST_CASE("MaxPool Indices: flat over batch and channels, row- or column-major spatially, first maximum wins",
          "[host_eval_window]") {
  // X [2, 1, 2, 3]; a 2 x 2 window, stride 1 -> Y [2, 1, 1, 2].
  //   image 0: 1 9 2 / 3 4 9   image 1: 5 5 5 / 5 5 5 (ties)
  const Tensor x = test::TensorOf("x", {2, 1, 2, 3}, {1, 9, 2, 3, 4, 9, 5, 5, 5, 5, 5, 5});
  auto pool = [&](int storage_order) {
    Graph g = test::OneNodeGraph("float[2,1,2,3] x", "float[2,1,1,2] y, int64[2,1,1,2] i",
                      "y, i = MaxPool <kernel_shape = [2, 2], storage_order = " + std::to_string(storage_order) + "> (x)");
    return EvalOnHost(g.node(0), {&x}, 13);
  };
  const auto row = pool(0);
  REQUIRE(row.size() == 2);
  CHECK(eval::HostValues(row[0]) == std::vector<double>{9, 9, 5, 5});
  // Image 0: the 9 at (0, 1) comes first in both windows (not the 9 at (1, 2)); image 1 (offset
  // 6): each window's first element.
  CHECK(row[1].int_data == std::vector<std::int64_t>{1, 1, 6, 7});
  // Column-major: (h, w) -> h + w * 2, plus the image's offset.
  const auto col = pool(1);
  CHECK(col[1].int_data == std::vector<std::int64_t>{2, 2, 6, 8});
}

TEST_CASE("MaxPool on int8 ignores padding, takes dilations and ceil_mode, and drops a window starting in the padding",
          "[host_eval_window]") {
  // Negative values with pads of 1: a padded zero would win if padding counted.
  const Tensor x = test::IntTensorOf("x", {1, 1, 1, 3}, {-5, -3, -9});
  Graph g = test::OneNodeGraph("int8[1,1,1,3] x", "int8[1,1,1,3] y",
                    "y = MaxPool <kernel_shape = [1, 3], pads = [0, 1, 0, 1]> (x)");
  const Tensor y = EvalOnHost(g.node(0), {&x}, 13).at(0);
  CHECK(y.elem_type == onnx::TensorProto::INT64);
  CHECK(y.int_data == std::vector<std::int64_t>{-3, -3, -3});

  // 1-D of 6, kernel 2 dilated by 2 (extent 3), stride 2, ceil_mode: (6 - 3) / 2 = 1.5 -> 3 windows
  // at 0, 2, 4; the one at 4 reads 4 and 6 (past the end: 4 alone).
  const Tensor line = test::TensorOf("x", {1, 1, 6}, {1, 7, 3, 2, 8, 0});
  Graph dilated = test::OneNodeGraph("float[1,1,6] x", "float[1,1,3] y",
                          "y = MaxPool <kernel_shape = [2], dilations = [2], strides = [2], ceil_mode = 1> (x)");
  CHECK(eval::HostValues(EvalOnHost(dilated.node(0), {&line}, 13).at(0)) == std::vector<double>{3, 8, 8});
  // ceil_mode with pads [0, 1], kernel 2, stride 2 on 4: ceil(3 / 2) + 1 = 3 windows, but the third
  // would start at 4, in the end padding: 2 windows.
  const Tensor four = test::TensorOf("x", {1, 1, 4}, {1, 2, 3, 4});
  Graph padded = test::OneNodeGraph("float[1,1,4] x", "float[1,1,M] y",
                         "y = MaxPool <kernel_shape = [2], strides = [2], pads = [0, 1], ceil_mode = 1> (x)");
  CHECK(EvalOnHost(padded.node(0), {&four}, 13).at(0).dims == std::vector<std::int64_t>{1, 1, 2});
  // SAME_LOWER: the odd pad at the beginning, so the first window is [pad, 1].
  Graph same = test::OneNodeGraph("float[1,1,4] x", "float[1,1,4] y", "y = MaxPool <kernel_shape = [2], auto_pad = \"SAME_LOWER\"> (x)");
  const Tensor falling = test::TensorOf("x", {1, 1, 4}, {4, 3, 2, 1});
  CHECK(eval::HostValues(EvalOnHost(same.node(0), {&falling}, 13).at(0)) == std::vector<double>{4, 4, 3, 2});
}

TEST_CASE("MaxUnpool scatters X to MaxPool's indices, output_shape extends the result with zeros",
          "[host_eval_window]") {
  // Values 9 and 8 at flat indices 1 and 5 of the unpooled [1, 1, 2, 3] ((1 - 1) * 1 + 2, (2 - 1) * 1 + 2).
  const Tensor x = test::TensorOf("x", {1, 1, 1, 2}, {9, 8});
  const Tensor i = test::IntTensorOf("i", {1, 1, 1, 2}, {1, 5});
  Graph g = test::OneNodeGraph("float[1,1,1,2] x, int64[1,1,1,2] i", "float[1,1,2,3] y", "y = MaxUnpool <kernel_shape = [2, 2]> (x, i)");
  const Tensor y = EvalOnHost(g.node(0), {&x, &i}, 13).at(0);
  CHECK(y.dims == std::vector<std::int64_t>{1, 1, 2, 3});
  CHECK(eval::HostValues(y) == std::vector<double>{0, 9, 0, 0, 0, 8});

  // output_shape [1, 1, 3, 4]: the 2 x 3 result at the origin, zeros after.
  const Tensor shape = test::IntTensorOf("s", {4}, {1, 1, 3, 4});
  Graph sized = test::OneNodeGraph("float[1,1,1,2] x, int64[1,1,1,2] i, int64[4] s", "float[1,1,3,4] y",
                        "y = MaxUnpool <kernel_shape = [2, 2]> (x, i, s)");
  CHECK(eval::HostValues(EvalOnHost(sized.node(0), {&x, &i, &shape}, 13).at(0)) ==
        std::vector<double>{0, 9, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0});

  const Tensor outside = test::IntTensorOf("i", {1, 1, 1, 2}, {1, 6});
  try {
    EvalOnHost(g.node(0), {&x, &outside}, 13);
    FAIL("an index outside the output was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    CHECK_THAT(e.what(), Catch::Contains("(MaxUnpool)") && Catch::Contains("index 6"));
  }
}

TEST_CASE("RoiAlign: half_pixel shifts the roi by half a pixel, output_half_pixel does not, max takes the "
          "largest weighted corner",
          "[host_eval_window]") {
  // X = 4 * row + col on a 4 x 4 image: bilinear interpolation of it is exact, so the average
  // over a bin of symmetric sample points is the value at the bin's centre.
  std::vector<float> plane;
  for (int v = 0; v < 16; ++v) plane.push_back(static_cast<float>(v));
  const Tensor x = test::TensorOf("x", {1, 1, 4, 4}, plane);
  const Tensor rois = test::TensorOf("r", {1, 4}, {0, 0, 2, 2});
  const Tensor batch = test::IntTensorOf("b", {1}, {0});
  auto align = [&](const std::string& attrs, int opset = 16) {
    Graph g = test::OneNodeGraph("float[1,1,4,4] x, float[1,4] r, int64[1] b", "float[1,1,1,1] y",
                      "y = RoiAlign <sampling_ratio = 2" + attrs + "> (x, r, b)", opset);
    return eval::HostValues(EvalOnHost(g.node(0), {&x, &rois, &batch}, opset).at(0))[0];
  };
  // half_pixel: the roi is [-0.5, 1.5]^2, samples at 0 and 1: the mean of 0, 1, 4, 5.
  CHECK(align("") == Approx(2.5));
  // output_half_pixel (and RoiAlign-10): [0, 2]^2, samples at 0.5 and 1.5: centre (1, 1) = 5.
  CHECK(align(", coordinate_transformation_mode = \"output_half_pixel\"") == Approx(5));
  CHECK(align("", 10) == Approx(5));
  // max, half_pixel: the samples are on pixels, the largest is 5 at (1, 1).
  CHECK(align(", mode = \"max\"") == Approx(5));
  // max, output_half_pixel: every sample lies between 4 pixels weighted 1/4; the largest weighted
  // corner is 10 / 4 at sample (1.5, 1.5) (the reference's max, not the largest interpolated value 7.5).
  CHECK(align(", mode = \"max\", coordinate_transformation_mode = \"output_half_pixel\"") == Approx(2.5));

  const Tensor bad_batch = test::IntTensorOf("b", {1}, {1});
  Graph g = test::OneNodeGraph("float[1,1,4,4] x, float[1,4] r, int64[1] b", "float[1,1,1,1] y", "y = RoiAlign (x, r, b)", 16);
  CHECK_THROWS_WITH(EvalOnHost(g.node(0), {&x, &rois, &bad_batch}, 16), Catch::Contains("batch index 1 outside X"));
}

TEST_CASE("RoiAlign lays out rois by roi, then channel, each from its own image, on 1 and 2 threads alike",
          "[host_eval_window]") {
  // X[b, c] = 1000 b + 100 c + 4 row + col: with output_half_pixel and one
  // 1 x 1 bin of 2 x 2 samples, each roi gives X at its centre.
  std::vector<float> values;
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c)
      for (int v = 0; v < 16; ++v) values.push_back(static_cast<float>(1000 * b + 100 * c + v));
  const Tensor x = test::TensorOf("x", {2, 3, 4, 4}, values);
  // Centres (row, col): (1, 1) = 5, (2, 2) = 10, (2, 1) = 9.
  const Tensor rois = test::TensorOf("r", {3, 4}, {0, 0, 2, 2, 1, 1, 3, 3, 0, 1, 2, 3});
  const Tensor batch = test::IntTensorOf("b", {3}, {1, 0, 1});
  Graph g = test::OneNodeGraph("float[2,3,4,4] x, float[3,4] r, int64[3] b", "float[3,3,1,1] y",
                               "y = RoiAlign <sampling_ratio = 2, coordinate_transformation_mode = "
                               "\"output_half_pixel\"> (x, r, b)",
                               16);
  std::vector<double> expected;
  const int images[] = {1, 0, 1}, centres[] = {5, 10, 9};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) expected.push_back(1000 * images[r] + 100 * c + centres[r]);
  for (const int threads : {1, 2}) {
    OmpTeam team(threads);
    const Tensor y = EvalOnHost(g.node(0), {&x, &rois, &batch}, 16).at(0);
    CHECK(y.dims == std::vector<std::int64_t>{3, 3, 1, 1});
    const std::vector<double> got = eval::HostValues(y);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]));
  }
}

TEST_CASE("LRN sums squares over the channels around c, floor((size - 1) / 2) before and the rest after",
          "[host_eval_window]") {
  // size 2: channel c sums c and c + 1. alpha 1, beta 1, bias 1: y = x / (1 + square_sum / 2).
  const Tensor x = test::TensorOf("x", {1, 3, 1, 1}, {1, 2, 3});
  Graph g = test::OneNodeGraph("float[1,3,1,1] x", "float[1,3,1,1] y", "y = LRN <size = 2, alpha = 1.0, beta = 1.0, bias = 1.0> (x)");
  test::CheckValues(EvalOnHost(g.node(0), {&x}, 13).at(0), {1 / 3.5, 2 / 7.5, 3 / 5.5}, 1e-9);
  // Defaults alpha 1e-4, beta 0.75, bias 1, size 3: channel 1 sums all three squares.
  Graph defaults = test::OneNodeGraph("float[1,3,1,1] x", "float[1,3,1,1] y", "y = LRN <size = 3> (x)");
  CHECK(eval::HostValues(EvalOnHost(defaults.node(0), {&x}, 13).at(0))[1] == Approx(2 / std::pow(1 + 1e-4 / 3 * 14, 0.75)));
}
