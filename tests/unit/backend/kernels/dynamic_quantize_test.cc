// DynamicQuantizeLinear (src/backend/kernels/dynamic_quantize.h) against the
// ONNX definition written out here (Operators.md, DynamicQuantizeLinear-11):
// scale = (max(x, 0) - min(x, 0)) / 255 (1 for zeros), zero point and y
// rounded half to even and saturated to [0, 255]. Equal bit for bit, over
// several chunks with vector tails, on ties, one-signed inputs, zeros and
// NaN; run plain and under the ISA caps (kernels.AVX2, kernels.SSE41).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/dynamic_quantize.h"

using onnxfuse::backend::DynamicQuantization;

namespace {

struct Expected {
  float scale;
  std::int64_t zero_point;
  std::vector<std::int64_t> y;
};

std::int64_t Saturated(float v) {
  if (std::isnan(v)) return 0;
  const float r = std::nearbyint(v);
  return r < 0 ? 0 : r > 255 ? 255 : static_cast<std::int64_t>(r);
}

Expected Definition(const std::vector<float>& x) {
  float low = 0, high = 0;
  for (float v : x)
    if (!std::isnan(v)) low = std::min(low, v), high = std::max(high, v);
  Expected e;
  e.scale = high == low ? 1.0f : (high - low) / 255.0f;
  e.zero_point = Saturated(0.0f - low / e.scale);
  for (float v : x) {
    if (std::isnan(v)) {
      e.y.push_back(0);
      continue;
    }
    const float r = std::nearbyint(v / e.scale) + static_cast<float>(e.zero_point);
    e.y.push_back(r < 0 ? 0 : r > 255 ? 255 : static_cast<std::int64_t>(r));
  }
  return e;
}

}  // namespace

TEST_CASE("DynamicQuantizeLinear kernel equals the ONNX op bit for bit", "[kernels]") {
  INFO("isa " << static_cast<int>(onnxfuse::backend::CpuIsa()));
  std::mt19937 rng(29);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  std::vector<std::vector<float>> inputs;
  for (std::int64_t n : {1, 7, 8, 33, 16384, 40000}) {  // tails, one chunk, several chunks
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = normal(rng);
    inputs.push_back(x);
  }
  inputs.push_back({-1.0f, 1.0f, 0.0f, 1.0f / 255, 3.0f / 255, -0.2f, 0.5f, 0.9f, 5.0f / 255});  // ties
  inputs.push_back({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 2.0f, 0.05f});                    // positive
  inputs.push_back({-3.0f, -2.0f, -1.0f, -0.5f, -0.25f, -0.125f, -4.0f, -1e-3f, -2.5f});        // negative
  inputs.push_back(std::vector<float>(20, 0.0f));                                              // zeros
  std::vector<float> with_nan(40, 0.25f);
  with_nan[3] = -1.0f, with_nan[17] = std::numeric_limits<float>::quiet_NaN(), with_nan[38] = with_nan[17];
  inputs.push_back(with_nan);
  for (const std::vector<float>& x : inputs) {
    INFO("count " << x.size() << ", x[0] " << x[0]);
    const Expected want = Definition(x);
    const auto n = static_cast<std::int64_t>(x.size());
    const DynamicQuantization q = onnxfuse::backend::DynamicQuantizationOf(x.data(), n);
    CHECK(q.scale == want.scale);
    CHECK(q.zero_point == want.zero_point);
    std::vector<float> y(x.size()), shifted(x.size());
    onnxfuse::backend::DynamicQuantizeToFloat(x.data(), y.data(), n, q, 0.0f);
    onnxfuse::backend::DynamicQuantizeToFloat(x.data(), shifted.data(), n, q, static_cast<float>(q.zero_point));
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto expected = static_cast<float>(want.y[i]);
      wrong += y[i] != expected || shifted[i] != expected - static_cast<float>(want.zero_point);
    }
    CHECK(wrong == 0);
  }
}
