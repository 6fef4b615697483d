// exp and swish on one AVX-512 or AVX2 register: shared by the activation
// kernels (backend/kernels/activation.cc) and the epilogues of our
// convolution kernels (PointwiseOp::Kind::kSwish, backend/kernels/pointwise.h),
// so that a swish computes the same values wherever it runs.
//
// exp(v) = 2^t, t = v log2 e = n + f, n = round(t), |f| <= 1/2; 2^f =
// exp(f ln2) by the Taylor series of exp to degree 6 (relative error below
// 2e-7 for |f ln2| <= ln2 / 2); 2^n by vscalefps on AVX-512 (0 or infinity
// where it leaves the float range), by the exponent bits on AVX2, with t
// clamped to [-126, 126] so that 2^n stays a normal float.
#pragma once

#include <immintrin.h>

namespace onnxfuse::backend {

inline constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;
/// AVX2's clamp of t: 2^n stays a normal float and 1 + exp(v) stays finite.
inline constexpr float kMaxExponent = 126.f;
inline constexpr float kExpC2 = 1.f / 2, kExpC3 = 1.f / 6, kExpC4 = 1.f / 24, kExpC5 = 1.f / 120,
                       kExpC6 = 1.f / 720;

/// 2^t per lane. t is only kept above -200, so that t = -infinity gives 0, not
/// NaN (inf - inf); a NaN lane becomes a number (see KeepNaN16 in activation.cc).
__attribute__((target("avx512f"))) inline __m512 Exp2_16(__m512 t) {
  t = _mm512_max_ps(t, _mm512_set1_ps(-200.f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  constexpr float l = kLn2;
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kExpC6 * l * l * l * l * l * l), f,
                             _mm512_set1_ps(kExpC5 * l * l * l * l * l));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExpC4 * l * l * l * l));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExpC3 * l * l * l));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExpC2 * l * l));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(l));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);  // p * 2^n
}

/// exp(v) per lane.
__attribute__((target("avx512f"))) inline __m512 Exp16(__m512 v) {
  return Exp2_16(_mm512_mul_ps(v, _mm512_set1_ps(kLog2e)));
}

/// Swish (SiLU) x / (1 + exp(-x)) per lane; NaN stays NaN.
__attribute__((target("avx512f"))) inline __m512 Swish16(__m512 x) {
  const __m512 e = Exp2_16(_mm512_mul_ps(x, _mm512_set1_ps(-kLog2e)));  // exp(-x)
  return _mm512_div_ps(x, _mm512_add_ps(e, _mm512_set1_ps(1.f)));
}

/// exp(v) per lane; v log2 e clamped to [-kMaxExponent, kMaxExponent].
__attribute__((target("avx2,fma"))) inline __m256 Exp8(__m256 v) {
  __m256 t = _mm256_mul_ps(v, _mm256_set1_ps(kLog2e));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-kMaxExponent)), _mm256_set1_ps(kMaxExponent));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 g = _mm256_mul_ps(_mm256_sub_ps(t, n), _mm256_set1_ps(kLn2));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kExpC6), g, _mm256_set1_ps(kExpC5));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kExpC4));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kExpC3));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kExpC2));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(1.f));
  // 2^n from the float's exponent bits: n in [-126, 126] keeps it a normal number.
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

/// Swish (SiLU) x / (1 + exp(-x)) per lane; NaN stays NaN.
__attribute__((target("avx2,fma"))) inline __m256 Swish8(__m256 x) {
  const __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(e, _mm256_set1_ps(1.f)));
}

}  // namespace onnxfuse::backend
