// Swish (SiLU), x * sigmoid(x) = x / (1 + exp(-x)), in place over a float
// buffer: the activation of EfficientNet (Tan & Le, 2019) and of ONNX's
// `x * Sigmoid(x)`.
//
// Why our own: oneDNN 2.6's eltwise_swish, as a post-op or a primitive, costs
// about 0.25 ns per element on the AMD Zen CI machine (0.35 ms on a
// 96x112x112 tensor, four times a Relu there), a quarter of efficientnet_b0's
// time. This kernel computes exp(-x) as 2^n * 2^f (n = round(-x log2 e),
// |f| <= 1/2, 2^f by its Taylor series to degree 6, relative error < 2e-7) with
// AVX-512 (vscalefps) or AVX2, chosen by the CPU at first use (and capped, as
// oneDNN is, by ONEDNN_MAX_CPU_ISA), and plain C++ elsewhere.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// data[i] = data[i] / (1 + exp(-data[i])) for i < count, over OpenMP threads.
/// Inputs below -126 ln 2 (about -87) give (a tiny) negative zero-ish value,
/// as exp(-x) is capped at 2^126; NaN stays NaN.
void SwishInPlace(float* data, std::int64_t count);

}  // namespace onnxfuse::backend
