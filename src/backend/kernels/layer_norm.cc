#include "backend/kernels/layer_norm.h"

#include <immintrin.h>

#include <cmath>

namespace onnxfuse::backend {

namespace {

__attribute__((target("avx2,fma"))) double Sum(__m256d a, __m256d b) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a, b));
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

struct Moments {
  double mean, inv;  ///< the row's mean and 1 / sqrt(var + epsilon)
};

// One row's mean, then its sum of squared deviations, each pass in double
// over four floats at a time (two accumulators per sum).
__attribute__((target("avx2,fma"))) Moments RowMoments(const float* x, std::int64_t n, double epsilon) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(x + j)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)));
  }
  double sum = Sum(s0, s1);
  for (; j < n; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(n);

  const __m256d m4 = _mm256_set1_pd(mean);
  s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), m4);
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)), m4);
    s0 = _mm256_fmadd_pd(d0, d0, s0), s1 = _mm256_fmadd_pd(d1, d1, s1);
  }
  double squares = Sum(s0, s1);
  for (; j < n; ++j) squares += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(squares / static_cast<double>(n) + epsilon)};
}

// One row's outputs, scale and shift per element.
__attribute__((target("avx2,fma"))) void LayerNormRow(const float* x, const float* scale, const float* shift,
                                                      float* y, float* mean_out, float* inv_out, std::int64_t n,
                                                      double epsilon) {
  const Moments m = RowMoments(x, n, epsilon);
  const __m256d m4 = _mm256_set1_pd(m.mean), inv4 = _mm256_set1_pd(m.inv);
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m256d d = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), m4), inv4);
    const __m256d out = _mm256_fmadd_pd(d, _mm256_cvtps_pd(_mm_loadu_ps(scale + j)), _mm256_cvtps_pd(_mm_loadu_ps(shift + j)));
    _mm_storeu_ps(y + j, _mm256_cvtpd_ps(out));
  }
  for (; j < n; ++j) y[j] = static_cast<float>((x[j] - m.mean) * m.inv * scale[j] + shift[j]);
  if (mean_out) *mean_out = static_cast<float>(m.mean);
  if (inv_out) *inv_out = static_cast<float>(m.inv);
}

// One row's outputs, one scale and shift for the whole row.
__attribute__((target("avx2,fma"))) void InstanceNormRow(const float* x, double scale, double shift, float* y,
                                                         std::int64_t n, double epsilon) {
  const Moments m = RowMoments(x, n, epsilon);
  const __m256d m4 = _mm256_set1_pd(m.mean), mul4 = _mm256_set1_pd(m.inv * scale), add4 = _mm256_set1_pd(shift);
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), m4);
    _mm_storeu_ps(y + j, _mm256_cvtpd_ps(_mm256_fmadd_pd(d, mul4, add4)));
  }
  for (; j < n; ++j) y[j] = static_cast<float>((x[j] - m.mean) * (m.inv * scale) + shift);
}

}  // namespace

void LayerNorm(const float* x, const float* scale, const float* shift, float* y, float* mean, float* inv_std_dev,
               std::int64_t rows, std::int64_t n, float epsilon) {
#pragma omp parallel for schedule(static) if (rows > 1 && rows * n > 4096)
  for (std::int64_t r = 0; r < rows; ++r)
    LayerNormRow(x + r * n, scale, shift, y + r * n, mean ? mean + r : nullptr, inv_std_dev ? inv_std_dev + r : nullptr,
                 n, epsilon);
}

void InstanceNorm(const float* x, const float* scale, const float* shift, float* y, std::int64_t batch,
                  std::int64_t channels, std::int64_t n, float epsilon) {
  const std::int64_t rows = batch * channels;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * n > 4096)
  for (std::int64_t r = 0; r < rows; ++r)
    InstanceNormRow(x + r * n, scale[r % channels], shift[r % channels], y + r * n, n, epsilon);
}

}  // namespace onnxfuse::backend
