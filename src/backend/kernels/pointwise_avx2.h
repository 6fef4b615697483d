// One step of our kernels' epilogue (PointwiseOp, backend/kernels/pointwise.h) on an
// AVX2 vector: shared by the AVX2 GEMM's micro-kernel (backend/kernels/gemm.cc) and the
// Winograd output transform (backend/kernels/winograd.cc).
#pragma once

#include <immintrin.h>

#include "backend/kernels/pointwise.h"
#include "backend/kernels/vector_math.h"

namespace onnxfuse::backend {

/// `op` applied to the 8 lanes of `v`. kAdd, the residual, leaves `v` as it
/// is: each kernel adds it where it reads its data.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 ApplyPointwise(__m256 v, const PointwiseOp& op) {
  const __m256 a = _mm256_set1_ps(op.a), b = _mm256_set1_ps(op.b);
  switch (op.kind) {
    case PointwiseOp::Kind::kClamp: return _mm256_min_ps(_mm256_max_ps(v, a), b);
    case PointwiseOp::Kind::kLinear: return _mm256_fmadd_ps(v, a, b);
    case PointwiseOp::Kind::kHardSwish:
      return _mm256_mul_ps(v, _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(v, a, b), _mm256_setzero_ps()),
                                            _mm256_set1_ps(1.0f)));
    case PointwiseOp::Kind::kSwish: return Swish8(v);
    case PointwiseOp::Kind::kAdd: break;
  }
  return v;
}

}  // namespace onnxfuse::backend
