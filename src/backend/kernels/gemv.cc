#include "backend/kernels/gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

// Rows read at once, each from its own quarter of the weights: four
// sequential streams, far apart.
constexpr std::int64_t kStreams = 4;

// out[r] = dot(w + r * stride, x) for r < kStreams, each row n floats.
using Dots = void (*)(const float* w, std::int64_t stride, const float* x, std::int64_t n, float* out);

void DotsScalar(const float* w, std::int64_t stride, const float* x, std::int64_t n, float* out) {
  for (std::int64_t r = 0; r < kStreams; ++r) {
    const float* row = w + r * stride;
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t i = 0; i < n; ++i) acc += row[i] * x[i];
    out[r] = acc;
  }
}

__attribute__((target("avx2,fma"), always_inline)) inline float HorizontalSum(__m256 v) {
  __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum4 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  return _mm_cvtss_f32(_mm_add_ss(sum4, _mm_movehdup_ps(sum4)));
}

// Two accumulators per row (eight FMA chains in all), x's 16 floats loaded
// once for the four rows.
__attribute__((target("avx2,fma"))) void DotsAvx2(const float* w, std::int64_t stride, const float* x,
                                                  std::int64_t n, float* out) {
  __m256 acc[kStreams][2];
#pragma GCC unroll 4
  for (int r = 0; r < kStreams; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
#pragma GCC unroll 4
    for (int r = 0; r < kStreams; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w + r * stride + i), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(w + r * stride + i + 8), x1, acc[r][1]);
    }
  }
  if (i + 8 <= n) {
    const __m256 x0 = _mm256_loadu_ps(x + i);
#pragma GCC unroll 4
    for (int r = 0; r < kStreams; ++r) acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w + r * stride + i), x0, acc[r][0]);
    i += 8;
  }
#pragma GCC unroll 4
  for (int r = 0; r < kStreams; ++r) {
    float sum = HorizontalSum(_mm256_add_ps(acc[r][0], acc[r][1]));
    for (std::int64_t j = i; j < n; ++j) sum += w[r * stride + j] * x[j];
    out[r] = sum;
  }
}

float Epilogue(float y, const std::vector<PointwiseOp>& epilogue, const float* addend) {
  for (const PointwiseOp& op : epilogue) switch (op.kind) {
      case PointwiseOp::Kind::kAdd: y += *addend; break;
      case PointwiseOp::Kind::kClamp:  // as vmaxps then vminps (oneDNN's eltwise_clip, the AVX2 epilogue): NaN to a
        y = std::min(y > op.a ? y : op.a, op.b);
        break;
      case PointwiseOp::Kind::kLinear: y = op.a * y + op.b; break;
      case PointwiseOp::Kind::kHardSwish: y *= std::min(std::max(op.a * y + op.b, 0.f), 1.f); break;
      case PointwiseOp::Kind::kSwish: y /= 1.f + std::exp(-y); break;
    }
  return y;
}

}  // namespace

void MatVec(const float* w, const float* bias, const float* x, float* y, std::int64_t m, std::int64_t n,
            const std::vector<PointwiseOp>& epilogue, const float* addend) {
  static const Dots dots = CpuIsa() == Isa::kScalar ? DotsScalar : DotsAvx2;
  const auto finish = [&](std::int64_t o, float sum) {
    y[o] = Epilogue((bias ? bias[o] : 0.f) + sum, epilogue, addend ? addend + o : nullptr);
  };
  // Row o of every quarter together: rows o, o + part, o + 2 part, o + 3 part.
  const std::int64_t part = m / kStreams;
#pragma omp parallel for schedule(static) if (m * n >= (1 << 16))
  for (std::int64_t o = 0; o < part; ++o) {
    float sums[kStreams];
    dots(w + o * n, part * n, x, n, sums);
    for (std::int64_t r = 0; r < kStreams; ++r) finish(o + r * part, sums[r]);
  }
  // The last m % 4 rows, one at a time: with stride 0 the four streams are
  // the same row, and only the first sum is kept.
  for (std::int64_t o = kStreams * part; o < m; ++o) {
    float sums[kStreams];
    const float* row = w + o * n;
    dots(row, 0, x, n, sums);
    finish(o, sums[0]);
  }
}

}  // namespace onnxfuse::backend
