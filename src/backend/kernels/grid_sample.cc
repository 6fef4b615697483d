#include "backend/kernels/grid_sample.h"

#include <algorithm>
#include <cmath>

namespace onnxfuse::backend {

namespace {

// A normalized coordinate g in [-1, 1] as a pixel coordinate of an axis of n pixels.
float Unnormalize(float g, std::int64_t n, bool align_corners) {
  const auto size = static_cast<float>(n);
  return align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
}

// x reflected into [low, high] by the borders, as often as it takes.
float Reflect(float x, float low, float high) {
  const float span = high - low;
  if (span <= 0) return low;
  float d = std::abs(x - low);
  const float flips = std::floor(d / span);
  d -= flips * span;
  return std::fmod(flips, 2.f) == 0 ? low + d : high - d;
}

float Pad(float x, std::int64_t n, GridSamplePadding padding, bool align_corners) {
  const auto last = static_cast<float>(n - 1);
  if (padding == GridSamplePadding::kBorder) return std::clamp(x, 0.f, last);
  if (padding == GridSamplePadding::kReflection)
    return std::clamp(align_corners ? Reflect(x, 0, last) : Reflect(x, -0.5f, last + 0.5f), 0.f, last);
  return x;
}

// The taps of one grid point inside the image: plane offsets and weights. A
// tap outside (zeros padding) is left out, so that it reads 0 even next to
// an infinite pixel.
struct Taps {
  int count = 0;
  std::int64_t at[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

void AddTap(Taps& t, std::int64_t row, std::int64_t col, float weight, std::int64_t h, std::int64_t w) {
  if (row < 0 || row >= h || col < 0 || col >= w) return;
  t.at[t.count] = row * w + col, t.weight[t.count] = weight;
  ++t.count;
}

Taps TapsOf(float gx, float gy, const GridSampleShape& s, GridSampleMode mode, GridSamplePadding padding,
            bool align_corners) {
  const float x = Pad(Unnormalize(gx, s.w, align_corners), s.w, padding, align_corners);
  const float y = Pad(Unnormalize(gy, s.h, align_corners), s.h, padding, align_corners);
  Taps t;
  if (std::isnan(x) || std::isnan(y)) return t;  // no tap: reads 0
  // Far outside (zeros padding) every tap is: clamped, so that the integer
  // conversions below stay in range.
  const float xc = std::clamp(x, -2.f, static_cast<float>(s.w) + 1), yc = std::clamp(y, -2.f, static_cast<float>(s.h) + 1);
  if (mode == GridSampleMode::kNearest) {  // std::nearbyint: half to even in the default rounding mode
    AddTap(t, static_cast<std::int64_t>(std::nearbyint(yc)), static_cast<std::int64_t>(std::nearbyint(xc)), 1.f, s.h, s.w);
    return t;
  }
  const float x0 = std::floor(xc), y0 = std::floor(yc), rx = xc - x0, ry = yc - y0;
  const auto c = static_cast<std::int64_t>(x0), r = static_cast<std::int64_t>(y0);
  AddTap(t, r, c, (1 - ry) * (1 - rx), s.h, s.w);
  AddTap(t, r, c + 1, (1 - ry) * rx, s.h, s.w);
  AddTap(t, r + 1, c, ry * (1 - rx), s.h, s.w);
  AddTap(t, r + 1, c + 1, ry * rx, s.h, s.w);
  return t;
}

}  // namespace

void GridSample2d(const float* x, const float* grid, float* out, const GridSampleShape& s, GridSampleMode mode,
                  GridSamplePadding padding, bool align_corners) {
  const std::int64_t points = s.ho * s.wo, plane = s.h * s.w;
#pragma omp parallel for schedule(static) if (s.n * points * s.c >= (1 << 14))
  for (std::int64_t np = 0; np < s.n * points; ++np) {
    const std::int64_t b = np / points, p = np % points;
    const Taps t = TapsOf(grid[np * 2], grid[np * 2 + 1], s, mode, padding, align_corners);
    const float* image = x + b * s.c * plane;
    float* dst = out + b * s.c * points + p;
    for (std::int64_t c = 0; c < s.c; ++c, image += plane, dst += points) {
      float v = 0;
      for (int k = 0; k < t.count; ++k) v += t.weight[k] * image[t.at[k]];
      *dst = v;
    }
  }
}

}  // namespace onnxfuse::backend
