// Softmax (src/backend/kernels/softmax.h) against the definition in long
// double: every output within 1 float ulp of the exact value, subnormal and
// underflowing ones included; the rows sum to 1; strided rows as contiguous
// ones, in place too; NaN and +inf make the row NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/softmax.h"
#include "ulps.h"

using onnxfuse::backend::Softmax;
using onnxfuse::test::Ulps;

namespace {

std::vector<long double> Reference(const std::vector<float>& x) {
  long double max = x[0];
  for (float v : x) max = std::max<long double>(max, v);
  long double sum = 0;
  for (float v : x) sum += std::exp(static_cast<long double>(v) - max);
  std::vector<long double> y;
  for (float v : x) y.push_back(std::exp(static_cast<long double>(v) - max) / sum);
  return y;
}

void CheckRow(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  Softmax(x.data(), y.data(), 1, static_cast<std::int64_t>(x.size()), 1);
  const std::vector<long double> exact = Reference(x);
  double worst = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    INFO("n " << x.size() << ", element " << j << ": x " << x[j] << ", y " << y[j] << ", exact "
              << static_cast<double>(exact[j]));
    CHECK(Ulps(y[j], exact[j]) <= 1.0);
    worst = std::max(worst, Ulps(y[j], exact[j]));
  }
  INFO("n " << x.size() << ": worst " << worst << " ulps");
  SUCCEED();
}

}  // namespace

TEST_CASE("Softmax over an axis of length 1 is exactly 1", "[kernels][softmax]") {
  for (float v : {0.0f, 1.0f, -3.5f, 20.0f, 1e30f, -1e-30f}) {
    float y = -1;
    Softmax(&v, &y, 1, 1, 1);
    CHECK(y == 1.0f);
  }
}

TEST_CASE("Softmax on rows with extreme differences: subnormal and underflowing probabilities", "[kernels][softmax]") {
  CheckRow({20, 0, -3, 1});
  CheckRow({0, -90, -100, -103, -104, -110, -1000});  // p near FLT_MIN, subnormal, rounding to 0
  CheckRow({5, 5});
  CheckRow({-1e30f, 1e30f, 0});
  CheckRow({7, 7, 7, 7, 7, 7, 7, 7, 7});
  CheckRow({-std::numeric_limits<float>::infinity(), 0, 1});
}

TEST_CASE("Softmax on random rows of every length, within 1 ulp of the exact value", "[kernels][softmax]") {
  std::mt19937 rng(4321);
  for (float spread : {1.0f, 10.0f, 100.0f}) {
    std::uniform_real_distribution<float> value(-spread, spread);
    for (std::size_t n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 100, 1000, 4097}) {
      std::vector<float> x(n);
      for (float& v : x) v = value(rng);
      CheckRow(x);
    }
  }
}

TEST_CASE("Softmax over a middle axis equals it over contiguous rows, on 1 and many threads", "[kernels][softmax]") {
  const std::int64_t outer = 3, n = 50, inner = 40;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> value(-8, 8);
  std::vector<float> x(static_cast<std::size_t>(outer * n * inner)), y(x.size());
  for (float& v : x) v = value(rng);
  Softmax(x.data(), y.data(), outer, n, inner);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<float> row(static_cast<std::size_t>(n)), alone(row.size());
      for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = x[static_cast<std::size_t>((o * n + j) * inner + i)];
      Softmax(row.data(), alone.data(), 1, n, 1);
      for (std::int64_t j = 0; j < n; ++j)
        REQUIRE(Ulps(y[static_cast<std::size_t>((o * n + j) * inner + i)], alone[static_cast<std::size_t>(j)]) <= 1.0);
    }
  // Contiguous rows split across threads, in place.
  std::vector<float> rows(static_cast<std::size_t>(64 * 100));
  for (float& v : rows) v = value(rng);
  std::vector<float> each(rows.size());
  for (std::size_t r = 0; r < 64; ++r) Softmax(rows.data() + r * 100, each.data() + r * 100, 1, 100, 1);
  Softmax(rows.data(), rows.data(), 64, 100, 1);
  CHECK(rows == each);
}

TEST_CASE("Softmax keeps NaN: a row with NaN or +inf is NaN", "[kernels][softmax]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const std::vector<float>& x :
       {std::vector<float>{nan, 1, 2}, std::vector<float>{1, nan, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, nan},
        std::vector<float>{1, inf, 2}}) {
    std::vector<float> y(x.size());
    Softmax(x.data(), y.data(), 1, static_cast<std::int64_t>(x.size()), 1);
    for (float v : y) CHECK(std::isnan(v));
  }
}
