#include "backend/kernels/quantize_dequantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/in_chunks.h"

// GCC 12 warns inside its own avx512fintrin.h: the unmasked intrinsics pass
// _mm512_undefined_ps() as the (ignored) merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onnxfuse::backend {

namespace {

// One element: what the vector paths compute lane by lane (max then min:
// NaN compares false and takes `low`, as _mm*_max_ps gives its second
// operand; + 0 turns round(-0.4) = -0 into the integer 0's +0).
inline float One(float x, float scale, float low, float high) {
  const float q = std::nearbyint(x / scale);
  return (std::min(q > low ? q : low, high) + 0.0f) * scale;
}

using Span = void (*)(const float*, float*, std::int64_t, float, float, float);

__attribute__((target("avx512f"))) void Avx512(const float* x, float* y, std::int64_t n, float scale, float low,
                                               float high) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(low), hi = _mm512_set1_ps(high), zero = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_add_ps(_mm512_min_ps(_mm512_max_ps(q, lo), hi), zero), s));
  }
  for (; i < n; ++i) y[i] = One(x[i], scale, low, high);
}

__attribute__((target("avx2"))) void Avx2(const float* x, float* y, std::int64_t n, float scale, float low,
                                          float high) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(low), hi = _mm256_set1_ps(high), zero = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 q = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_add_ps(_mm256_min_ps(_mm256_max_ps(q, lo), hi), zero), s));
  }
  for (; i < n; ++i) y[i] = One(x[i], scale, low, high);
}

void Baseline(const float* x, float* y, std::int64_t n, float scale, float low, float high) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = One(x[i], scale, low, high);
}

}  // namespace

void QuantizeDequantize(const float* x, float* y, std::int64_t count, float scale, float low, float high) {
  static const Span span = ForCpuIsa<Span>(Avx512, Avx2, Baseline);
  constexpr std::int64_t kChunk = 16384;  // elements per OpenMP task: 64 KB
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { span(x + begin, y + begin, n, scale, low, high); });
}

}  // namespace onnxfuse::backend
