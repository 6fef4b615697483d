// Layer normalization over the last axis of rows (ONNX Operators.md,
// LayerNormalization-17 with stash_type 1, and the decomposition exporters
// write for opset 13: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div):
//   mean = sum(x) / n,  var = sum((x - mean)^2) / n,
//   y = (x - mean) / sqrt(var + epsilon) * scale + shift.
// x and y are dense row-major [rows, n]; scale and shift [n].
//
// Why our own: oneDNN 2.6's layer_normalization_forward sums in float, so a
// row of equal values gets a mean an ulp or so away from them, and deviations
// that a small epsilon turns into large outputs (six equal values 1.0965 with
// epsilon 1e-6 gave 1.5e-4 where the exact result, shift, has 0 deviation;
// ONNX Runtime gives shift). Here mean and variance are sums in double, exact
// for a row of equal floats (n times a float and the quotient by n are exact
// in double), and each output is computed in double and rounded once.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// y = LayerNorm(x) as above, rows split across OpenMP threads. `mean` and
/// `inv_std_dev` ([rows] each, float, 1 / sqrt(var + epsilon)) are written
/// when not nullptr: the op's optional outputs. `y` may be `x`. n >= 1. NaN
/// or an infinity in a row makes the row NaN, as the formula does.
void LayerNorm(const float* x, const float* scale, const float* shift, float* y, float* mean, float* inv_std_dev,
               std::int64_t rows, std::int64_t n, float epsilon);

/// Instance normalization (ONNX Operators.md, InstanceNormalization-6):
/// x and y are dense [batch, channels, n] (n: the product of the spatial
/// dims); each of the batch * channels rows of n elements is normalized as a
/// LayerNorm row above, then scaled by scale[c] and shifted by shift[c] (both
/// [channels]). Same sums in double: ONNX Runtime's results on nearly
/// constant rows, where a mean summed in float is off by more than the row's
/// spread. `y` may be `x`; n >= 1.
void InstanceNorm(const float* x, const float* scale, const float* shift, float* y, std::int64_t batch,
                  std::int64_t channels, std::int64_t n, float epsilon);

}  // namespace onnxfuse::backend
