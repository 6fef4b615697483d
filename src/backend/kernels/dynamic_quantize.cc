#include "backend/kernels/dynamic_quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/in_chunks.h"

namespace onnxfuse::backend {

namespace {

struct Range {
  float low = 0, high = 0;
};

// std::min (low, v) keeps low for a NaN v, as _mm256_min_ps (v, low) does.
void RangeBaseline(const float* x, std::int64_t n, Range& r) {
  for (std::int64_t i = 0; i < n; ++i) r.low = std::min(r.low, x[i]), r.high = std::max(r.high, x[i]);
}

__attribute__((target("avx2"))) void RangeAvx2(const float* x, std::int64_t n, Range& r) {
  __m256 low = _mm256_set1_ps(r.low), high = _mm256_set1_ps(r.high);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    low = _mm256_min_ps(v, low), high = _mm256_max_ps(v, high);
  }
  alignas(32) float lows[8], highs[8];
  _mm256_store_ps(lows, low), _mm256_store_ps(highs, high);
  for (int k = 0; k < 8; ++k) r.low = std::min(r.low, lows[k]), r.high = std::max(r.high, highs[k]);
  RangeBaseline(x + i, n - i, r);
}

// saturate(round(v / scale) + z) - shift, with the clamp to [-z, 255 - z]
// first: max then min, so NaN takes the low bound (y = 0), as the vector path.
inline float QuantizeOne(float v, float scale, float low, float high, float offset) {
  const float q = std::nearbyint(v / scale);
  return std::min(q > low ? q : low, high) + offset;
}

void QuantizeBaseline(const float* x, float* out, std::int64_t n, float scale, float low, float high, float offset) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = QuantizeOne(x[i], scale, low, high, offset);
}

__attribute__((target("avx2"))) void QuantizeAvx2(const float* x, float* out, std::int64_t n, float scale, float low,
                                                  float high, float offset) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(low), hi = _mm256_set1_ps(high),
               add = _mm256_set1_ps(offset);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 q = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(q, lo), hi), add));
  }
  QuantizeBaseline(x + i, out + i, n - i, scale, low, high, offset);
}

constexpr std::int64_t kChunk = 16384;  // elements per OpenMP task

}  // namespace

DynamicQuantization DynamicQuantizationOf(const float* x, std::int64_t count) {
  using Span = void (*)(const float*, std::int64_t, Range&);
  static const Span span = ForCpuIsa<Span>(RangeAvx2, RangeAvx2, RangeBaseline);
  std::vector<Range> parts(static_cast<std::size_t>(std::max<std::int64_t>((count + kChunk - 1) / kChunk, 1)));
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { span(x + begin, n, parts[static_cast<std::size_t>(begin / kChunk)]); });
  Range r;
  for (const Range& p : parts) r.low = std::min(r.low, p.low), r.high = std::max(r.high, p.high);
  DynamicQuantization q;
  q.scale = r.high == r.low ? 1.0f : (r.high - r.low) / 255.0f;
  // saturate(round(0 - low / scale)) in [0, 255], NaN (an infinite x) to 0,
  // as the host evaluator's Saturate.
  const float z = std::nearbyint(0.0f - r.low / q.scale);
  q.zero_point = static_cast<std::int32_t>(std::min(z > 0.0f ? z : 0.0f, 255.0f));
  return q;
}

void DynamicQuantizeToFloat(const float* x, float* out, std::int64_t count, DynamicQuantization q, float shift) {
  using Span = void (*)(const float*, float*, std::int64_t, float, float, float, float);
  static const Span span = ForCpuIsa<Span>(QuantizeAvx2, QuantizeAvx2, QuantizeBaseline);
  const auto z = static_cast<float>(q.zero_point);
  const float low = -z, high = 255.0f - z, offset = z - shift;
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { span(x + begin, out + begin, n, q.scale, low, high, offset); });
}

void DynamicScaleToFloat(const float* x, float* out, std::int64_t count, DynamicQuantization q, float shift) {
  const float offset = static_cast<float>(q.zero_point) - shift;
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) {
    for (std::int64_t i = begin; i < begin + n; ++i) out[i] = x[i] / q.scale + offset;
  });
}

}  // namespace onnxfuse::backend
