// GridSample2d (src/backend/kernels/grid_sample.h) on cases worked out by
// hand: the identity grid reproduces the image (align_corners: -1 and 1 at
// the corner pixels' centres), a point half way between four pixels is their
// mean, a point outside reads 0 (zeros), the edge pixel (border) or its
// mirror image (reflection), and a NaN point reads 0. The lowering's test
// (tests/unit/backend/lower/grid_sample_test.cc) checks every mode against
// the host evaluator.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/kernels/grid_sample.h"

using namespace onnxfuse::backend;

TEST_CASE("GridSample2d on hand-worked points", "[kernels][grid_sample]") {
  // One 2 x 3 image, two channels: pixel (r, c) = 10 r + c, and its negative.
  const std::vector<float> x = {0, 1, 2, 10, 11, 12, 0, -1, -2, -10, -11, -12};
  const GridSampleShape shape{1, 2, 2, 3, 1, 6};
  // (x, y) normalized: the top-left and bottom-right centres, the middle of
  // pixels (0,0)-(1,1), a point left of the image, a point far right, NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> grid = {-1, -1, 1, 1, -0.5f, 0, -2, -1, 3, 1, nan, 0};
  std::vector<float> out(12);
  GridSample2d(x.data(), grid.data(), out.data(), shape, GridSampleMode::kBilinear, GridSamplePadding::kZeros, true);
  // x: -2 unnormalizes to column -1, 3 to column 4: both outside.
  CHECK(out == std::vector<float>{0, 12, 5.5f, 0, 0, 0, 0, -12, -5.5f, 0, 0, 0});
  GridSample2d(x.data(), grid.data(), out.data(), shape, GridSampleMode::kBilinear, GridSamplePadding::kBorder, true);
  CHECK(out == std::vector<float>{0, 12, 5.5f, 0, 12, 0, 0, -12, -5.5f, 0, -12, 0});
  GridSample2d(x.data(), grid.data(), out.data(), shape, GridSampleMode::kBilinear, GridSamplePadding::kReflection, true);
  // Column -1 reflects by 0 to column 1 (row 0); column 4 to 0 (by 2, then by 0; row 1).
  CHECK(out == std::vector<float>{0, 12, 5.5f, 1, 10, 0, 0, -12, -5.5f, -1, -10, 0});
  GridSample2d(x.data(), grid.data(), out.data(), shape, GridSampleMode::kNearest, GridSamplePadding::kZeros, true);
  // Nearest of (0.5, 0.5) rounds half to even: (0, 0).
  CHECK(out == std::vector<float>{0, 12, 0, 0, 0, 0, 0, -12, 0, 0, 0, 0});
}

TEST_CASE("GridSample2d splits points across threads with the same result as one by one", "[kernels][grid_sample]") {
  const GridSampleShape shape{4, 3, 9, 7, 40, 50};  // 8000 points x 3 channels: above the threading threshold
  std::vector<float> x(static_cast<std::size_t>(shape.n * shape.c * shape.h * shape.w));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.25f - 2;
  std::vector<float> grid(static_cast<std::size_t>(shape.n * shape.ho * shape.wo * 2));
  for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<float>(i * 7919 % 251) / 100.f - 1.25f;
  std::vector<float> all(static_cast<std::size_t>(shape.n * shape.c * shape.ho * shape.wo));
  GridSample2d(x.data(), grid.data(), all.data(), shape, GridSampleMode::kBilinear, GridSamplePadding::kZeros, false);
  // Each point alone (a shape of one point), gathered in the output's order.
  for (std::int64_t b = 0; b < shape.n; ++b)
    for (std::int64_t p = 0; p < shape.ho * shape.wo; ++p) {
      std::vector<float> one(static_cast<std::size_t>(shape.c));
      GridSample2d(x.data() + b * shape.c * shape.h * shape.w, grid.data() + (b * shape.ho * shape.wo + p) * 2, one.data(),
                   GridSampleShape{1, shape.c, shape.h, shape.w, 1, 1}, GridSampleMode::kBilinear, GridSamplePadding::kZeros,
                   false);
      for (std::int64_t c = 0; c < shape.c; ++c)
        REQUIRE(all[static_cast<std::size_t>((b * shape.c + c) * shape.ho * shape.wo + p)] == one[static_cast<std::size_t>(c)]);
    }
}
