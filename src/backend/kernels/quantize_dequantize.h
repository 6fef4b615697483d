// A QuantizeLinear whose one reader is a DequantizeLinear of the same
// per-tensor scale and zero point, as one pass over float data (the QDQ
// format's "fake quantization" of an activation: ONNX Runtime's static
// quantizer writes one such pair after every quantized activation):
//
//   y = (saturate(round(x / scale) + zero_point) - zero_point) * scale
//     = clamp(round(x / scale), low, high) * scale,
//   low = qmin - zero_point, high = qmax - zero_point (ONNX Operators.md,
//   QuantizeLinear-13 and DequantizeLinear-13; round: to nearest, ties to even).
//
// The same float32 operations as the host evaluator's two ops
// (src/eval/host_eval_quantize.cc): a division, not a multiplication by the
// reciprocal, so the result is the pair's, bit for bit. AVX-512, AVX2 or
// plain C++ by CpuIsa() (cpu_isa.h).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// y[i] = clamp(round(x[i] / scale), low, high) * scale for i < count, over
/// OpenMP threads; NaN gives low * scale (QuantizeLinear saturates it low);
/// a zero result is +0, as the integer 0 dequantized.
/// `y` may be `x`. low <= 0 <= high, integers.
void QuantizeDequantize(const float* x, float* y, std::int64_t count, float scale, float low, float high);

}  // namespace onnxfuse::backend
