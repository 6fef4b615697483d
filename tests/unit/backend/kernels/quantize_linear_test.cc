// QuantizeLinear and DequantizeLinear (src/backend/kernels/quantize_linear.h)
// against the ONNX definitions written out here in int64: q =
// saturate(round_half_even(x / scale) + zero_point), y = (q - zero_point) *
// scale. Equal bit for bit, on ties, saturation at both ends, NaN, ±inf and
// counts that leave vector tails; run plain and under the ISA caps
// (kernels.AVX2, kernels.SSE41).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/quantize_linear.h"

using onnxfuse::backend::Int8Type;

namespace {

std::int64_t Quantized(float x, float scale, std::int64_t zero_point, std::int64_t qmin, std::int64_t qmax) {
  if (std::isnan(x)) return qmin;
  const double r = std::nearbyint(static_cast<double>(x / scale)) + static_cast<double>(zero_point);
  return r < static_cast<double>(qmin) ? qmin : r > static_cast<double>(qmax) ? qmax : static_cast<std::int64_t>(r);
}

}  // namespace

TEST_CASE("QuantizeLinear and DequantizeLinear kernels equal the ONNX ops bit for bit", "[kernels]") {
  INFO("isa " << static_cast<int>(onnxfuse::backend::CpuIsa()));
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const auto& [type, zero_point] : {std::tuple<Int8Type, std::int32_t>{Int8Type::kUint8, 128},
                                         {Int8Type::kUint8, 0}, {Int8Type::kUint8, 255}, {Int8Type::kInt8, 0},
                                         {Int8Type::kInt8, -5}, {Int8Type::kInt8, 127}}) {
    const std::int64_t qmin = type == Int8Type::kUint8 ? 0 : -128, qmax = type == Int8Type::kUint8 ? 255 : 127;
    for (float scale : {0.02f, 0.1f, 1.0f / 3.0f}) {
      std::vector<float> x;
      for (int k = -300; k <= 300; ++k) x.push_back((static_cast<float>(k) + 0.5f) * scale);  // ties at every step
      for (int k = 0; k < 1000; ++k) x.push_back(normal(rng));
      x.push_back(std::numeric_limits<float>::quiet_NaN());
      x.push_back(std::numeric_limits<float>::infinity());
      x.push_back(-std::numeric_limits<float>::infinity());
      x.push_back(-0.0f);
      for (std::size_t count : {x.size(), std::size_t{31}, std::size_t{33}, std::size_t{7}}) {
        std::vector<std::uint8_t> q(count);
        QuantizeLinear(x.data(), q.data(), type, static_cast<std::int64_t>(count), scale, zero_point);
        std::vector<float> y(count);
        DequantizeLinear(q.data(), type, y.data(), static_cast<std::int64_t>(count), scale, zero_point);
        for (std::size_t i = 0; i < count; ++i) {
          const std::int64_t want = Quantized(x[i], scale, zero_point, qmin, qmax);
          const std::int64_t got = type == Int8Type::kUint8 ? q[i] : static_cast<std::int8_t>(q[i]);
          INFO("x " << x[i] << " scale " << scale << " zero point " << zero_point << " element " << i);
          REQUIRE(got == want);
          const float back = static_cast<float>(want - zero_point) * scale;
          CHECK(std::memcmp(&y[i], &back, sizeof(float)) == 0);
        }
      }
    }
  }
}
