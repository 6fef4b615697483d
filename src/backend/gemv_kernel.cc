#include "gemv_kernel.h"

#include <immintrin.h>

#include <algorithm>

#include "cpu_isa.h"

namespace onnxfuse::backend {

namespace {

// How far ahead of the multiply-adds the weights are prefetched: 64 cache
// lines (1 to 4 KB: 26.0 to 26.9 GB/s from memory for [1280, 960]).
constexpr std::int64_t kPrefetchBytes = 4096;

using Dot = float (*)(const float* w, const float* x, std::int64_t n);

float DotScalar(const float* w, const float* x, std::int64_t n) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t i = 0; i < n; ++i) acc += w[i] * x[i];
  return acc;
}

__attribute__((target("avx2,fma"))) float DotAvx2(const float* w, const float* x, std::int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // The two cache lines these 32 weights span, 4 KB on.
    const char* ahead = reinterpret_cast<const char*>(w + i) + kPrefetchBytes;
    _mm_prefetch(ahead, _MM_HINT_T0);
    _mm_prefetch(ahead + 64, _MM_HINT_T0);
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
  const __m256 sum8 = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
  __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(sum8), _mm256_extractf128_ps(sum8, 1));
  sum4 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  float acc = _mm_cvtss_f32(_mm_add_ss(sum4, _mm_movehdup_ps(sum4)));
  for (; i < n; ++i) acc += w[i] * x[i];
  return acc;
}

float Epilogue(float y, const std::vector<PointwiseOp>& epilogue, const float* addend) {
  for (const PointwiseOp& op : epilogue) switch (op.kind) {
      case PointwiseOp::Kind::kAdd: y += *addend; break;
      case PointwiseOp::Kind::kClamp: y = std::min(std::max(y, op.a), op.b); break;
      case PointwiseOp::Kind::kLinear: y = op.a * y + op.b; break;
      case PointwiseOp::Kind::kHardSwish: y *= std::min(std::max(op.a * y + op.b, 0.f), 1.f); break;
    }
  return y;
}

}  // namespace

void MatVec(const float* w, const float* bias, const float* x, float* y, std::int64_t m, std::int64_t n,
            const std::vector<PointwiseOp>& epilogue, const float* addend) {
  static const Dot dot = CpuIsa() == Isa::kScalar ? DotScalar : DotAvx2;
#pragma omp parallel for schedule(static) if (m * n >= (1 << 16))
  for (std::int64_t o = 0; o < m; ++o) {
    const float sum = (bias ? bias[o] : 0.f) + dot(w + o * n, x, n);
    y[o] = Epilogue(sum, epilogue, addend ? addend + o : nullptr);
  }
}

}  // namespace onnxfuse::backend
