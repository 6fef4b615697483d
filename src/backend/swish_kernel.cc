#include "swish_kernel.h"

#include <immintrin.h>

// GCC 12 warns inside its own avx512fintrin.h: the unmasked intrinsics pass
// _mm512_undefined_ps() as the (ignored) merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace onnxfuse::backend {

namespace {

constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;
constexpr float kMaxExponent = 126.f;  // exp(-x) capped at 2^126: 1 + e stays finite
// exp(g) = sum g^k / k! for k <= 6: |g| <= ln2 / 2 keeps the remainder below 2e-7 (relative).
constexpr float kC2 = 1.f / 2, kC3 = 1.f / 6, kC4 = 1.f / 24, kC5 = 1.f / 120, kC6 = 1.f / 720;

using Kernel = void (*)(float*, std::int64_t);

void SwishScalar(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.f + std::exp(-x[i]));
}

__attribute__((target("avx512f"))) __m512 Swish16(__m512 x) {
  __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(-kLog2e));
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(-kMaxExponent)), _mm512_set1_ps(kMaxExponent));
  __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 g = _mm512_mul_ps(_mm512_sub_ps(t, n), _mm512_set1_ps(kLn2));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kC6), g, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(1.f));
  __m512 e = _mm512_scalef_ps(p, n);  // p * 2^n
  return _mm512_div_ps(x, _mm512_add_ps(e, _mm512_set1_ps(1.f)));
}

__attribute__((target("avx512f"))) void SwishAvx512(float* x, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, Swish16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    auto mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, mask, Swish16(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

__attribute__((target("avx2,fma"))) __m256 Swish8(__m256 x) {
  __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(-kLog2e));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-kMaxExponent)), _mm256_set1_ps(kMaxExponent));
  __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 g = _mm256_mul_ps(_mm256_sub_ps(t, n), _mm256_set1_ps(kLn2));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kC6), g, _mm256_set1_ps(kC5));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(1.f));
  // 2^n from the float's exponent bits: n in [-126, 126] keeps it a normal number.
  __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  return _mm256_div_ps(x, _mm256_add_ps(e, _mm256_set1_ps(1.f)));
}

__attribute__((target("avx2,fma"))) void SwishAvx2(float* x, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, Swish8(_mm256_loadu_ps(x + i)));
  SwishScalar(x + i, n - i);
}

// The widest kernel the CPU runs, no wider than oneDNN may use: ONEDNN_MAX_CPU_ISA
// (AVX2, SSE41, ...) caps both, so that a run standing in for an older CPU is one.
Kernel PickKernel() {
  __builtin_cpu_init();
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::string cap = env ? env : "";
  std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char c) { return std::toupper(c); });
  const bool avx512_allowed = cap.empty() || cap == "ALL" || cap.rfind("AVX512", 0) == 0 || cap.rfind("AVX10", 0) == 0;
  const bool avx2_allowed = avx512_allowed || cap.rfind("AVX2", 0) == 0;
  if (avx512_allowed && __builtin_cpu_supports("avx512f")) return SwishAvx512;
  if (avx2_allowed && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SwishAvx2;
  return SwishScalar;
}

}  // namespace

void SwishInPlace(float* data, std::int64_t count) {
  static const Kernel kernel = PickKernel();
  constexpr std::int64_t kChunk = 4096;  // floats per task: 16 KiB, a multiple of every vector width
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) kernel(data + c * kChunk, std::min(kChunk, count - c * kChunk));
}

}  // namespace onnxfuse::backend
