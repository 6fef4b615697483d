// LogSoftmax on float32 (ONNX Operators.md, LogSoftmax-13):
//   y = x - max(x) - log(sum(exp(x - max(x)))) along one axis.
// x and y are dense row-major [outer, n, inner] (the axis in the middle; the
// last axis is inner = 1).
//
// Why our own: oneDNN 2.6's logsoftmax evaluates log(sum exp) with an
// absolute error near log(1) = 0, so the dominant element of a row comes out
// at about +1.4e-6 (a positive log-probability) and an axis of length 1 at
// 1.4e-6 instead of 0. Here the sum leaves out the first maximal element k,
// whose term is exactly 1: with s = sum_{j != k} exp(x_j - max),
//   y_j = (x_j - max) - log1p(s),
// so y_k = -log1p(s) is exactly 0 when s = 0 (length 1), and every y_j <= 0.
// In double throughout (x_j - max is exact there; exp, the sum and log1p
// round at 2^-53), then rounded once to float: each output is within a float
// ulp or so of the exact value relative to its own size, near 0 included. NaN in a row
// makes the row NaN, as the formula does.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// What an output does whose probability exp(y) is below the smallest
/// normal float (y < log(2^-126)).
enum class LogProbability {
  kExact,           ///< LogSoftmax: the exact log-probability, finite
  kOfFloatSoftmax,  ///< Log(Softmax(x)): the log of that probability rounded to
                    ///< float, as the two ops give: -inf where it rounds to 0
};

/// y = LogSoftmax(x) over the middle axis of [outer, n, inner], rows split
/// across OpenMP threads. `y` may be `x`. n >= 1.
void LogSoftmax(const float* x, float* y, std::int64_t outer, std::int64_t n, std::int64_t inner,
                LogProbability kind = LogProbability::kExact);

}  // namespace onnxfuse::backend
