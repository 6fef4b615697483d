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

TEST_CASE("QuantizedAdd equals DequantizeLinear, Add, [Relu,] QuantizeLinear bit for bit", "[kernels]") {
  INFO("isa " << static_cast<int>(onnxfuse::backend::CpuIsa()));
  using onnxfuse::backend::QuantizedOperand;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const bool relu : {false, true}) {
    for (const std::size_t count : {std::size_t{7}, std::size_t{33}, std::size_t{1000}, std::size_t{40000}}) {
      // a uint8 at 0.05 around 128, b int8 at 0.02 around -3, y uint8 at 0.06 around 100 (or int8 at 0.04).
      std::vector<std::uint8_t> a(count), b(count), y(count);
      for (std::size_t i = 0; i < count; ++i) a[i] = static_cast<std::uint8_t>(byte(rng)), b[i] = static_cast<std::uint8_t>(byte(rng));
      const QuantizedOperand qa{a.data(), Int8Type::kUint8, 0.05f, 128}, qb{b.data(), Int8Type::kInt8, 0.02f, -3};
      for (const auto& [type, scale, zero_point] : {std::tuple<Int8Type, float, std::int32_t>{Int8Type::kUint8, 0.06f, 100},
                                                    {Int8Type::kInt8, 0.04f, 0}}) {
        QuantizedAdd(qa, qb, relu, y.data(), type, scale, zero_point, static_cast<std::int64_t>(count));
        const std::int64_t qmin = type == Int8Type::kUint8 ? 0 : -128, qmax = type == Int8Type::kUint8 ? 255 : 127;
        for (std::size_t i = 0; i < count; ++i) {
          const float fa = static_cast<float>(static_cast<std::int32_t>(a[i]) - 128) * 0.05f;
          const float fb = static_cast<float>(static_cast<std::int32_t>(static_cast<std::int8_t>(b[i])) + 3) * 0.02f;
          float sum = fa + fb;
          if (relu && sum < 0.f) sum = 0.f;
          const std::int64_t want = Quantized(sum, scale, zero_point, qmin, qmax);
          const std::int64_t got = type == Int8Type::kUint8 ? y[i] : static_cast<std::int8_t>(y[i]);
          INFO("element " << i << " relu " << relu);
          REQUIRE(got == want);
        }
      }
    }
  }
}
