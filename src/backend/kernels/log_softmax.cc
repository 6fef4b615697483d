#include "backend/kernels/log_softmax.h"

#include <cmath>

namespace onnxfuse::backend {

namespace {

// log(2^-126), the log of the smallest normal float.
constexpr double kLogSmallestNormal = -87.3365447505531;

// One row of `n` values `stride` apart.
void LogSoftmaxRow(const float* x, float* y, std::int64_t n, std::int64_t stride, LogProbability kind) {
  std::int64_t k = 0;  // the first maximal element; a NaN anywhere reaches the sum
  for (std::int64_t j = 1; j < n; ++j)
    if (x[j * stride] > x[k * stride]) k = j;
  const double max = x[k * stride];
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j)
    if (j != k) s += std::exp(static_cast<double>(x[j * stride]) - max);
  const double log_sum = std::log1p(s);
  for (std::int64_t j = 0; j < n; ++j) {
    double log_p = (static_cast<double>(x[j * stride]) - max) - log_sum;
    if (kind == LogProbability::kOfFloatSoftmax && log_p < kLogSmallestNormal)
      log_p = std::log(static_cast<double>(static_cast<float>(std::exp(log_p))));  // a subnormal float, or 0: -inf
    y[j * stride] = static_cast<float>(log_p);
  }
}

}  // namespace

void LogSoftmax(const float* x, float* y, std::int64_t outer, std::int64_t n, std::int64_t inner,
                LogProbability kind) {
  const std::int64_t rows = outer * inner;
#pragma omp parallel for schedule(static) if (rows * n > 4096)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t o = r / inner, i = r % inner;
    LogSoftmaxRow(x + o * n * inner + i, y + o * n * inner + i, n, inner, kind);
  }
}

}  // namespace onnxfuse::backend
