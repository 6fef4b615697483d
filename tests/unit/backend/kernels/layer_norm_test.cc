// LayerNorm (src/backend/kernels/layer_norm.h) against the definition in long
// double: every output within 2 float ulps of the exact value at its own size
// or of the row's deviation scale; a row of equal values gives exactly the
// shift; the statistics; in place; NaN makes the row NaN.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/layer_norm.h"

using onnxfuse::backend::LayerNorm;

namespace {

struct Exact {
  std::vector<long double> y;
  long double mean = 0, inv = 0;
};

Exact Reference(const std::vector<float>& x, const std::vector<float>& scale, const std::vector<float>& shift,
                float epsilon) {
  Exact e;
  const auto n = static_cast<long double>(x.size());
  for (float v : x) e.mean += v;
  e.mean /= n;
  long double var = 0;
  for (float v : x) var += (v - e.mean) * (v - e.mean);
  e.inv = 1 / std::sqrt(var / n + epsilon);
  for (std::size_t i = 0; i < x.size(); ++i) e.y.push_back((x[i] - e.mean) * e.inv * scale[i] + shift[i]);
  return e;
}

// The rounding of an output is relative to the larger of its size and the
// size of its terms, |scale| and |shift| (the float ulp there).
void CheckRow(const std::vector<float>& x, float epsilon, std::mt19937& rng) {
  const std::size_t n = x.size();
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> scale(n), shift(n), y(n), mean(1), inv(1);
  for (std::size_t i = 0; i < n; ++i) scale[i] = u(rng), shift[i] = u(rng);
  LayerNorm(x.data(), scale.data(), shift.data(), y.data(), mean.data(), inv.data(), 1, static_cast<std::int64_t>(n),
            epsilon);
  const Exact e = Reference(x, scale, shift, epsilon);
  int bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double size = std::max({std::fabs(e.y[i]), std::fabs(static_cast<long double>(scale[i])),
                                       std::fabs(static_cast<long double>(shift[i]))});
    const long double ulp = size * std::numeric_limits<float>::epsilon();
    bad += std::fabs(y[i] - e.y[i]) > 2 * ulp;
  }
  INFO("row of " << n << ", epsilon " << epsilon);
  CHECK(bad == 0);
  CHECK(std::fabs(mean[0] - e.mean) <= std::fabs(e.mean) * std::numeric_limits<float>::epsilon());
  CHECK(std::fabs(inv[0] - e.inv) <= e.inv * std::numeric_limits<float>::epsilon());
}

}  // namespace

TEST_CASE("LayerNorm of a row of equal values gives exactly the shift, for any epsilon", "[kernels][layer_norm]") {
  for (std::int64_t n : {1, 3, 6, 8, 13, 256, 1001}) {
    for (float value : {1.09649827f, -3.5e-3f, 7e20f}) {
      std::vector<float> x(static_cast<std::size_t>(n), value), scale(x.size(), 2.5f), shift(x.size()), y(x.size());
      for (std::size_t i = 0; i < shift.size(); ++i) shift[i] = 0.25f * static_cast<float>(i) - 1.f;
      float mean = 0, inv = 0;
      LayerNorm(x.data(), scale.data(), shift.data(), y.data(), &mean, &inv, 1, n, 1e-6f);
      INFO("n " << n << ", value " << value);
      CHECK(y == shift);
      CHECK(mean == value);
      CHECK(inv == static_cast<float>(1 / std::sqrt(static_cast<double>(1e-6f))));
    }
  }
}

TEST_CASE("LayerNorm on random rows of every length and spread, within 2 ulps", "[kernels][layer_norm]") {
  std::mt19937 rng(2026);
  for (std::int64_t n = 1; n <= 70; ++n)
    for (float spread : {1e-4f, 1.f, 100.f}) {
      std::uniform_real_distribution<float> u(1.f - spread, 1.f + spread);
      std::vector<float> x(static_cast<std::size_t>(n));
      for (float& v : x) v = u(rng);
      CheckRow(x, 1e-5f, rng);
      CheckRow(x, 1e-12f, rng);
    }
  std::vector<float> big(4097);
  std::normal_distribution<float> g(3.f, 0.5f);
  for (float& v : big) v = g(rng);
  CheckRow(big, 1e-5f, rng);
}

TEST_CASE("LayerNorm over many rows on the threads equals it row by row, in place too", "[kernels][layer_norm]") {
  const std::int64_t rows = 97, n = 67;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 2.f);
  std::vector<float> x(static_cast<std::size_t>(rows * n)), scale(static_cast<std::size_t>(n)),
      shift(static_cast<std::size_t>(n));
  for (float& v : x) v = g(rng);
  for (std::size_t i = 0; i < scale.size(); ++i) scale[i] = g(rng), shift[i] = g(rng);
  std::vector<float> all(x.size()), mean(static_cast<std::size_t>(rows)), inv(static_cast<std::size_t>(rows));
  LayerNorm(x.data(), scale.data(), shift.data(), all.data(), mean.data(), inv.data(), rows, n, 1e-5f);
  std::vector<float> in_place = x;
  LayerNorm(in_place.data(), scale.data(), shift.data(), in_place.data(), nullptr, nullptr, rows, n, 1e-5f);
  CHECK(in_place == all);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> one(static_cast<std::size_t>(n));
    float m = 0, i = 0;
    LayerNorm(x.data() + r * n, scale.data(), shift.data(), one.data(), &m, &i, 1, n, 1e-5f);
    CHECK(std::equal(one.begin(), one.end(), all.begin() + r * n));
    CHECK(m == mean[static_cast<std::size_t>(r)]);
    CHECK(i == inv[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("LayerNorm keeps NaN: a row with NaN or an infinity is NaN, the others are not", "[kernels][layer_norm]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1, 2, nan, 4, 5, 6, 1, 2, 3, inf, 5, 6, 1, 2, 3, 4, 5, 6};
  const std::vector<float> scale(6, 1.f), shift(6, 0.f);
  std::vector<float> y(x.size());
  LayerNorm(x.data(), scale.data(), shift.data(), y.data(), nullptr, nullptr, 3, 6, 1e-5f);
  for (int i = 0; i < 12; ++i) CHECK(std::isnan(y[static_cast<std::size_t>(i)]));
  for (int i = 12; i < 18; ++i) CHECK(std::isfinite(y[static_cast<std::size_t>(i)]));
}

TEST_CASE("InstanceNorm: each (n, c) row normalized, scale[c] and shift[c], within 2 ulps of long double",
          "[kernels][layer_norm]") {
  using onnxfuse::backend::InstanceNorm;
  // Nearly constant rows (spread 1e-4 around 0.74) are where a mean summed in
  // float is off by a good part of the spread.
  std::mt19937 rng(71291585);
  for (std::int64_t spatial : {1, 7, 8, 225, 1031})
    for (float spread : {1e-4f, 0.05f, 10.f}) {
      const std::int64_t batch = 2, channels = 3;
      std::uniform_real_distribution<float> u(0.74f - spread, 0.74f + spread), p(-2.f, 2.f);
      std::vector<float> x(static_cast<std::size_t>(batch * channels * spatial)), y(x.size());
      for (float& v : x) v = u(rng);
      const std::vector<float> scale = {p(rng), p(rng), p(rng)}, shift = {p(rng), p(rng), p(rng)};
      InstanceNorm(x.data(), scale.data(), shift.data(), y.data(), batch, channels, spatial, 1e-5f);
      int bad = 0;
      for (std::int64_t r = 0; r < batch * channels; ++r) {
        const std::vector<float> row(x.begin() + r * spatial, x.begin() + (r + 1) * spatial);
        const auto c = static_cast<std::size_t>(r % channels);
        const Exact e = Reference(row, std::vector<float>(row.size(), scale[c]),
                                  std::vector<float>(row.size(), shift[c]), 1e-5f);
        for (std::int64_t i = 0; i < spatial; ++i) {
          const long double size = std::max({std::fabs(e.y[static_cast<std::size_t>(i)]),
                                             std::fabs(static_cast<long double>(scale[c])),
                                             std::fabs(static_cast<long double>(shift[c]))});
          bad += std::fabs(y[static_cast<std::size_t>(r * spatial + i)] - e.y[static_cast<std::size_t>(i)]) >
                 2 * size * std::numeric_limits<float>::epsilon();
        }
      }
      INFO("spatial " << spatial << ", spread " << spread);
      CHECK(bad == 0);
      std::vector<float> in_place = x;
      InstanceNorm(in_place.data(), scale.data(), shift.data(), in_place.data(), batch, channels, spatial, 1e-5f);
      CHECK(in_place == y);
    }
}
