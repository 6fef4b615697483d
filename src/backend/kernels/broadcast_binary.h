// Add, Sub, Mul, Div, Max, Min and PRelu on float32 (ONNX Operators.md, Add-14 etc.) with both
// operands multidirectionally broadcast (broadcast.h): the case oneDNN's
// binary primitive cannot take, since its src0 must have the output's dims.
// RAFT adds a per-sample offset [256,1,1,2] to a grid [1,7,7,2] this way.
// All tensors dense row-major. Built for AVX-512, AVX2 and the baseline,
// chosen by CpuIsa() (cpu_isa.h); every build gives the same bits.
#pragma once

#include "backend/kernels/broadcast.h"

namespace onnxfuse::backend {

/// kPRelu: a < 0 ? b * a : a (ONNX PRelu-16, b the slope).
enum class BinaryAlg { kAdd, kSub, kMul, kDiv, kMax, kMin, kPRelu };

/// out[i] = a[i] (alg) b[i] over the plan's output, a and b read through their
/// broadcast strides (plan operands in the order a, b). IEEE float32
/// arithmetic, as oneDNN's binary primitive computes it; Max and Min of a NaN
/// are NaN (ONNX Max-13, as ONNX Runtime).
void BroadcastBinary(BinaryAlg alg, const float* a, const float* b, float* out, const BroadcastPlan<2>& plan);

}  // namespace onnxfuse::backend
