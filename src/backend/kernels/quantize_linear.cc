#include "backend/kernels/quantize_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/in_chunks.h"

namespace onnxfuse::backend {

namespace {

struct Range {
  float low, high;  // qmin - zero_point, qmax - zero_point
};

Range RangeOf(Int8Type type, std::int32_t zero_point) {
  const float qmin = type == Int8Type::kUint8 ? 0.f : -128.f, qmax = type == Int8Type::kUint8 ? 255.f : 127.f;
  return {qmin - static_cast<float>(zero_point), qmax - static_cast<float>(zero_point)};
}

// One element: what the vector path computes lane by lane (max then min:
// NaN compares false and takes `low`, as _mm256_max_ps gives its second operand).
template <typename T>
inline T QuantizeOne(float x, float scale, Range r, std::int32_t zero_point) {
  const float q = std::nearbyint(x / scale);
  return static_cast<T>(static_cast<std::int32_t>(std::min(q > r.low ? q : r.low, r.high)) + zero_point);
}

template <typename T>
void QuantizeBaseline(const float* x, T* q, std::int64_t n, float scale, Range r, std::int32_t zero_point) {
  for (std::int64_t i = 0; i < n; ++i) q[i] = QuantizeOne<T>(x[i], scale, r, zero_point);
}

// 8 values quantized, as int32 lanes of q - zero_point's range plus the zero point.
__attribute__((target("avx2"))) inline __m256i QuantizedInts(const float* p, __m256 s, __m256 lo, __m256 hi, __m256i z) {
  const __m256 v = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(p), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi)), z);
}

template <typename T>
__attribute__((target("avx2"))) void QuantizeAvx2(const float* x, T* q, std::int64_t n, float scale, Range r,
                                                  std::int32_t zero_point) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(r.low), hi = _mm256_set1_ps(r.high);
  const __m256i z = _mm256_set1_epi32(zero_point);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 32 values in range, so the packs never saturate
    const __m256i ab = _mm256_packs_epi32(QuantizedInts(x + i, s, lo, hi, z), QuantizedInts(x + i + 8, s, lo, hi, z));
    const __m256i cd = _mm256_packs_epi32(QuantizedInts(x + i + 16, s, lo, hi, z), QuantizedInts(x + i + 24, s, lo, hi, z));
    const __m256i bytes = std::is_same_v<T, std::uint8_t> ? _mm256_packus_epi16(ab, cd) : _mm256_packs_epi16(ab, cd);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  QuantizeBaseline(x + i, q + i, n - i, scale, r, zero_point);
}

template <typename T>
void DequantizeBaseline(const T* q, float* y, std::int64_t n, float scale, std::int32_t zero_point) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<std::int32_t>(q[i]) - zero_point) * scale;
}

template <typename T>
__attribute__((target("avx2"))) void DequantizeAvx2(const T* q, float* y, std::int64_t n, float scale,
                                                    std::int32_t zero_point) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zero_point);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
    const __m256i v = std::is_same_v<T, std::uint8_t> ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
  }
  DequantizeBaseline(q + i, y + i, n - i, scale, zero_point);
}

constexpr std::int64_t kChunk = 16384;  // elements per OpenMP task

template <typename T>
void Quantize(const float* x, T* q, std::int64_t count, float scale, Range r, std::int32_t zero_point) {
  using Span = void (*)(const float*, T*, std::int64_t, float, Range, std::int32_t);
  static const Span span = ForCpuIsa<Span>(QuantizeAvx2<T>, QuantizeAvx2<T>, QuantizeBaseline<T>);
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { span(x + begin, q + begin, n, scale, r, zero_point); });
}

template <typename T>
void Dequantize(const T* q, float* y, std::int64_t count, float scale, std::int32_t zero_point) {
  using Span = void (*)(const T*, float*, std::int64_t, float, std::int32_t);
  static const Span span = ForCpuIsa<Span>(DequantizeAvx2<T>, DequantizeAvx2<T>, DequantizeBaseline<T>);
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { span(q + begin, y + begin, n, scale, zero_point); });
}

// The float values of `count` (<= kBlock) bytes of `q`, at offset `begin`.
void DequantizeBlock(const QuantizedOperand& q, std::int64_t begin, std::int64_t count, float* out) {
  using U8 = void (*)(const std::uint8_t*, float*, std::int64_t, float, std::int32_t);
  using S8 = void (*)(const std::int8_t*, float*, std::int64_t, float, std::int32_t);
  static const U8 u8 = ForCpuIsa<U8>(DequantizeAvx2<std::uint8_t>, DequantizeAvx2<std::uint8_t>,
                                     DequantizeBaseline<std::uint8_t>);
  static const S8 s8 = ForCpuIsa<S8>(DequantizeAvx2<std::int8_t>, DequantizeAvx2<std::int8_t>,
                                     DequantizeBaseline<std::int8_t>);
  if (q.type == Int8Type::kUint8) u8(static_cast<const std::uint8_t*>(q.data) + begin, out, count, q.scale, q.zero_point);
  else s8(static_cast<const std::int8_t*>(q.data) + begin, out, count, q.scale, q.zero_point);
}

}  // namespace

void QuantizedAdd(const QuantizedOperand& a, const QuantizedOperand& b, bool relu, void* y, Int8Type y_type,
                  float y_scale, std::int32_t y_zero_point, std::int64_t count) {
  using U8 = void (*)(const float*, std::uint8_t*, std::int64_t, float, Range, std::int32_t);
  using S8 = void (*)(const float*, std::int8_t*, std::int64_t, float, Range, std::int32_t);
  static const U8 u8 = ForCpuIsa<U8>(QuantizeAvx2<std::uint8_t>, QuantizeAvx2<std::uint8_t>,
                                     QuantizeBaseline<std::uint8_t>);
  static const S8 s8 = ForCpuIsa<S8>(QuantizeAvx2<std::int8_t>, QuantizeAvx2<std::int8_t>, QuantizeBaseline<std::int8_t>);
  const Range r = RangeOf(y_type, y_zero_point);
  constexpr std::int64_t kBlock = 512;  // floats per operand on the stack: two blocks stay in L1
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) {
    alignas(64) float fa[kBlock], fb[kBlock];
    for (std::int64_t at = begin; at < begin + n; at += kBlock) {
      const std::int64_t m = std::min(kBlock, begin + n - at);
      DequantizeBlock(a, at, m, fa);
      DequantizeBlock(b, at, m, fb);
      for (std::int64_t i = 0; i < m; ++i) fa[i] += fb[i];
      if (relu)
        for (std::int64_t i = 0; i < m; ++i) fa[i] = fa[i] < 0.f ? 0.f : fa[i];  // NaN stays NaN, as Relu keeps it
      if (y_type == Int8Type::kUint8) u8(fa, static_cast<std::uint8_t*>(y) + at, m, y_scale, r, y_zero_point);
      else s8(fa, static_cast<std::int8_t*>(y) + at, m, y_scale, r, y_zero_point);
    }
  });
}

void QuantizeLinear(const float* x, void* q, Int8Type type, std::int64_t count, float scale, std::int32_t zero_point) {
  const Range r = RangeOf(type, zero_point);
  if (type == Int8Type::kUint8) Quantize(x, static_cast<std::uint8_t*>(q), count, scale, r, zero_point);
  else Quantize(x, static_cast<std::int8_t*>(q), count, scale, r, zero_point);
}

void DequantizeLinear(const void* q, Int8Type type, float* y, std::int64_t count, float scale, std::int32_t zero_point) {
  if (type == Int8Type::kUint8) Dequantize(static_cast<const std::uint8_t*>(q), y, count, scale, zero_point);
  else Dequantize(static_cast<const std::int8_t*>(q), y, count, scale, zero_point);
}

}  // namespace onnxfuse::backend
