// QuantizeDequantize (src/backend/kernels/quantize_dequantize.h) against
// QuantizeLinear then DequantizeLinear as ONNX Operators.md defines them,
// written out here in int64: q = saturate(round_half_even(x / scale) +
// zero_point), y = (q - zero_point) * scale. Equal bit for bit, on ties,
// saturation at both ends, NaN, and counts that leave vector tails; run
// plain and under the ISA caps (kernels.AVX2, kernels.SSE41).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/quantize_dequantize.h"

using onnxfuse::backend::QuantizeDequantize;

namespace {

float Pair(float x, float scale, std::int64_t zero_point, std::int64_t qmin, std::int64_t qmax) {
  std::int64_t q = qmin;  // NaN saturates low
  if (!std::isnan(x)) {
    const double r = std::nearbyint(static_cast<double>(x / scale));  // x / scale in float, as ONNX Runtime
    q = r < static_cast<double>(qmin - zero_point) ? qmin
        : r > static_cast<double>(qmax - zero_point) ? qmax
                                                     : static_cast<std::int64_t>(r) + zero_point;
  }
  return static_cast<float>(q - zero_point) * scale;
}

void CheckAgainstPair(const std::vector<float>& x, float scale, std::int64_t zero_point, std::int64_t qmin,
                      std::int64_t qmax) {
  std::vector<float> y(x.size());
  QuantizeDequantize(x.data(), y.data(), static_cast<std::int64_t>(x.size()), scale,
                     static_cast<float>(qmin - zero_point), static_cast<float>(qmax - zero_point));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = Pair(x[i], scale, zero_point, qmin, qmax);
    INFO("x " << x[i] << " scale " << scale << " zero point " << zero_point << " element " << i);
    CHECK(std::memcmp(&y[i], &want, sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("QuantizeDequantize equals QuantizeLinear then DequantizeLinear bit for bit", "[kernels]") {
  INFO("isa " << static_cast<int>(onnxfuse::backend::CpuIsa()));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const auto& [zero_point, qmin, qmax] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{128, 0, 255},
                                               {0, 0, 255}, {255, 0, 255}, {0, -128, 127}, {-5, -128, 127}}) {
    for (float scale : {0.02f, 0.1f, 1.0f / 3.0f}) {
      std::vector<float> x;
      for (int k = -300; k <= 300; ++k) x.push_back((static_cast<float>(k) + 0.5f) * scale);  // ties at every step
      for (int k = 0; k < 1000; ++k) x.push_back(normal(rng));
      x.push_back(std::numeric_limits<float>::quiet_NaN());
      x.push_back(std::numeric_limits<float>::infinity());
      x.push_back(-std::numeric_limits<float>::infinity());
      x.push_back(1e30f);
      x.push_back(-0.0f);
      CheckAgainstPair(x, scale, zero_point, qmin, qmax);
    }
  }
}

TEST_CASE("QuantizeDequantize runs in place and over counts that leave vector tails", "[kernels]") {
  for (std::int64_t count : {1, 7, 15, 17, 33, 40000}) {
    std::vector<float> x(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) x[static_cast<std::size_t>(i)] = 0.37f * static_cast<float>(i % 97 - 40);
    std::vector<float> in_place = x;
    QuantizeDequantize(in_place.data(), in_place.data(), count, 0.25f, -128.0f, 127.0f);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      INFO("count " << count << " element " << i);
      CHECK(in_place[k] == Pair(x[k], 0.25f, 0, -128, 127));
    }
  }
}
