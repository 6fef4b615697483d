#include "backend/kernels/softmax.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace onnxfuse::backend {

namespace {

// exp(d) = 2^k exp(r), d = k ln2 + r, |r| <= ln2 / 2, with ln2 split in a
// high part of 32 significant bits and the rest, so that k ln2hi is exact for
// every k used here (the reduction of fdlibm's e_exp.c; the two constants
// are its ln2HI and ln2LO).
constexpr double kLog2e = 1.44269504088896338700e+00;
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
// exp(r) = sum r^i / i! for i <= 11: the remainder is below 7e-15 relative for |r| <= ln2 / 2.
constexpr int kDegree = 11;
constexpr double kInverseFactorial[kDegree + 1] = {1.0,       1.0,        1.0 / 2,     1.0 / 6,
                                                   1.0 / 24,  1.0 / 120,  1.0 / 720,   1.0 / 5040,
                                                   1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};
// d is clamped here: exp(-200) < 2^-288, zero once divided by a sum >= 1 and
// rounded to float, and 2^k stays a normal double.
constexpr double kLowest = -200.0;

// exp(d) for four d <= 0 (or NaN, which stays NaN: max returns its second
// operand when either is NaN, and the polynomial carries it).
__attribute__((target("avx2,fma"))) __m256d Exp4(__m256d d) {
  d = _mm256_max_pd(_mm256_set1_pd(kLowest), d);
  const __m256d k = _mm256_round_pd(_mm256_mul_pd(d, _mm256_set1_pd(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Hi), d);
  r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Lo), r);
  __m256d p = _mm256_set1_pd(kInverseFactorial[kDegree]);
  for (int i = kDegree - 1; i >= 0; --i) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kInverseFactorial[i]));
  // 2^k: k + 1023 in the exponent field.
  const __m256i biased = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023));
  return _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52)));
}

// One contiguous row of n values; e: n doubles of scratch.
__attribute__((target("avx2,fma"))) void SoftmaxRowAvx2(const float* x, float* y, std::int64_t n, double* e) {
  __m256 max8 = _mm256_set1_ps(-INFINITY);
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(x + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, max8);
  float max = *std::max_element(lanes, lanes + 8);
  for (; j < n; ++j) max = std::max(max, x[j]);  // a NaN is skipped here and reaches the sum below
  const __m256d max4 = _mm256_set1_pd(max);
  __m256d sum4 = _mm256_setzero_pd();
  for (j = 0; j + 4 <= n; j += 4) {
    const __m256d v = Exp4(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), max4));
    _mm256_storeu_pd(e + j, v);
    sum4 = _mm256_add_pd(sum4, v);
  }
  alignas(32) double partial[4];
  _mm256_store_pd(partial, sum4);
  double sum = (partial[0] + partial[1]) + (partial[2] + partial[3]);
  for (; j < n; ++j) sum += e[j] = std::exp(static_cast<double>(x[j]) - max);
  const __m256d inverse4 = _mm256_set1_pd(1.0 / sum);
  for (j = 0; j + 4 <= n; j += 4) _mm_storeu_ps(y + j, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(e + j), inverse4)));
  for (; j < n; ++j) y[j] = static_cast<float>(e[j] / sum);
}

// One row of n values `stride` apart, in double.
void SoftmaxRowStrided(const float* x, float* y, std::int64_t n, std::int64_t stride, double* e) {
  float max = x[0];
  for (std::int64_t j = 1; j < n; ++j) max = std::max(max, x[j * stride]);
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += e[j] = std::exp(static_cast<double>(x[j * stride]) - max);
  for (std::int64_t j = 0; j < n; ++j) y[j * stride] = static_cast<float>(e[j] / sum);
}

}  // namespace

void Softmax(const float* x, float* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  const std::int64_t rows = outer * inner;
#pragma omp parallel if (rows > 1 && rows * n > 4096)
  {
    std::vector<double> e(static_cast<std::size_t>(n));  // this thread's exponentials
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t o = r / inner, i = r % inner;
      const float* row = x + o * n * inner + i;
      float* out = y + o * n * inner + i;
      if (inner == 1) SoftmaxRowAvx2(row, out, n, e.data());
      else SoftmaxRowStrided(row, out, n, inner, e.data());
    }
  }
}

}  // namespace onnxfuse::backend
