// Softmax on float32 (ONNX Operators.md, Softmax-13):
//   y = exp(x - max(x)) / sum(exp(x - max(x))) along one axis.
// x and y are dense row-major [outer, n, inner] (the axis in the middle; the
// last axis is inner = 1).
//
// Why our own: oneDNN 2.6's softmax_forward computes exp and the sum in
// float, leaving up to 21 float ulps (2.5e-6 relative) on rows of 1,000
// values. Here x - max is exact (in double), exp is a degree-11 polynomial in
// double (error below 1e-14 relative), the sum and the quotient are in
// double, and each output is rounded to float once: within one float ulp of
// the exact value, subnormal results included. A NaN in a row makes the row
// NaN, as the formula does (so does +inf: inf - inf).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// y = Softmax(x) over the middle axis of [outer, n, inner], rows split
/// across OpenMP threads. `y` may be `x`. n >= 1. Contiguous rows (inner = 1)
/// run on AVX2 + FMA, which onnx-fuse requires (backend/runtime/cpu_requirement.h).
void Softmax(const float* x, float* y, std::int64_t outer, std::int64_t n, std::int64_t inner);

}  // namespace onnxfuse::backend
