// LogSoftmax (src/backend/kernels/log_softmax.h) against the definition in
// long double: every output within 2 float ulps of the exact value (relative
// to its own size, so near 0 too), exactly 0 over an axis of length 1, never
// above 0; strided rows as contiguous ones; NaN kept.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/log_softmax.h"
#include "ulps.h"

using onnxfuse::backend::LogSoftmax;
using onnxfuse::test::Ulps;

namespace {

// x_j - max - log(sum exp(x_i - max)) in long double, the logarithm as
// log1p of the sum without one maximal term (that term is 1): log(1 + t) for
// t below long double's epsilon would round to 0.
std::vector<long double> Reference(const std::vector<float>& x) {
  std::size_t k = 0;
  for (std::size_t j = 1; j < x.size(); ++j)
    if (x[j] > x[k]) k = j;
  const long double max = x[k];
  long double rest = 0;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (j != k) rest += std::exp(static_cast<long double>(x[j]) - max);
  std::vector<long double> y;
  for (float v : x) y.push_back(static_cast<long double>(v) - max - std::log1p(rest));
  return y;
}

void CheckRow(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  LogSoftmax(x.data(), y.data(), 1, static_cast<std::int64_t>(x.size()), 1);
  const std::vector<long double> exact = Reference(x);
  for (std::size_t j = 0; j < x.size(); ++j) {
    INFO("n " << x.size() << ", element " << j << ": x " << x[j] << ", y " << y[j] << ", exact "
              << static_cast<double>(exact[j]));
    CHECK(y[j] <= 0.0f);
    CHECK(Ulps(y[j], exact[j]) <= 2.0);
  }
}

}  // namespace

TEST_CASE("LogSoftmax over an axis of length 1 is exactly 0", "[kernels][log_softmax]") {
  for (float v : {0.0f, 1.0f, -3.5f, 20.0f, 1e30f, -1e-30f}) {
    float y = -1;
    LogSoftmax(&v, &y, 1, 1, 1);
    CHECK(y == 0.0f);
  }
  // Many rows of one element, strided as a [4, 1, 3] tensor over the middle axis.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, y(12, 1.0f);
  LogSoftmax(x.data(), y.data(), 4, 1, 3);
  CHECK(y == std::vector<float>(12, 0.0f));
}

TEST_CASE("LogSoftmax's dominant class is a log-probability: at most 0", "[kernels][log_softmax]") {
  CheckRow({20, 0, -3, 1});
  CheckRow({0, -200, -300});          // exp(-200) is far below the dominant term's ulp
  CheckRow({5, 5});                   // a tie: log(1/2) each
  CheckRow({-1e30f, 1e30f, 0});
  CheckRow({7, 7, 7, 7, 7, 7, 7});
}

TEST_CASE("LogSoftmax on random rows of every length, within 2 ulps of the exact value", "[kernels][log_softmax]") {
  std::mt19937 rng(1234);
  for (float spread : {1.0f, 10.0f, 100.0f}) {
    std::uniform_real_distribution<float> value(-spread, spread);
    for (std::size_t n : {1, 2, 3, 7, 16, 33, 100, 1000, 4097}) {
      std::vector<float> x(n);
      for (float& v : x) v = value(rng);
      CheckRow(x);
    }
  }
}

TEST_CASE("LogSoftmax over a middle axis equals it over contiguous rows, on 1 and many threads", "[kernels][log_softmax]") {
  // x [outer 3, n 50, inner 40]: row (o, i) is x[o][*][i].
  const std::int64_t outer = 3, n = 50, inner = 40;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-8, 8);
  std::vector<float> x(static_cast<std::size_t>(outer * n * inner)), y(x.size());
  for (float& v : x) v = value(rng);
  LogSoftmax(x.data(), y.data(), outer, n, inner);  // 6000 elements: split across threads
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<float> row(static_cast<std::size_t>(n)), alone(row.size());
      for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = x[static_cast<std::size_t>((o * n + j) * inner + i)];
      LogSoftmax(row.data(), alone.data(), 1, n, 1);
      for (std::int64_t j = 0; j < n; ++j)
        REQUIRE(y[static_cast<std::size_t>((o * n + j) * inner + i)] == alone[static_cast<std::size_t>(j)]);
    }
  // In place.
  std::vector<float> z = x;
  LogSoftmax(z.data(), z.data(), outer, n, inner);
  CHECK(z == y);
}

TEST_CASE("LogSoftmax keeps NaN: a row with NaN is NaN", "[kernels][log_softmax]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>& x : {std::vector<float>{nan, 1, 2}, std::vector<float>{1, nan, 2},
                                      std::vector<float>{1, 2, nan}}) {
    std::vector<float> y(3);
    LogSoftmax(x.data(), y.data(), 1, 3, 1);
    for (float v : y) CHECK(std::isnan(v));
  }
}

TEST_CASE("Log of float Softmax: exact above FLT_MIN, -inf where the float probability is 0", "[kernels][log_softmax]") {
  using onnxfuse::backend::LogProbability;
  const std::vector<float> x = {0, -3, -80, -90, -100, -103, -104, -110, -1000};
  std::vector<float> exact(x.size()), of_float(x.size());
  LogSoftmax(x.data(), exact.data(), 1, static_cast<std::int64_t>(x.size()), 1, LogProbability::kExact);
  LogSoftmax(x.data(), of_float.data(), 1, static_cast<std::int64_t>(x.size()), 1, LogProbability::kOfFloatSoftmax);
  const std::vector<long double> reference = Reference(x);
  for (std::size_t j = 0; j < x.size(); ++j) {
    INFO("element " << j << ": x " << x[j] << ", exact " << exact[j] << ", of float " << of_float[j]);
    CHECK(Ulps(exact[j], reference[j]) <= 2.0);  // finite, however small the probability
    // The log of exp(reference) rounded to float: exactly the same above
    // log(FLT_MIN), the log of a subnormal below it, and -inf under 2^-150.
    const float p = static_cast<float>(std::exp(reference[j]));
    if (p == 0) CHECK(of_float[j] == -std::numeric_limits<float>::infinity());
    else if (x[j] > -87) CHECK(of_float[j] == exact[j]);
    else CHECK(of_float[j] == static_cast<float>(std::log(static_cast<double>(p))));
  }
}
