// DynamicQuantizeLinear over a dense float32 buffer (ONNX Operators.md,
// DynamicQuantizeLinear-11): the uint8 quantization of x's range widened to
// hold 0,
//
//   scale = (max(x, 0) - min(x, 0)) / 255, or 1 when x is all zeros (ONNX
//           Runtime's choice where the formula divides 0 by 0)
//   zero_point = saturate(round(-min(x, 0) / scale))
//   y = saturate(round(x / scale) + zero_point)   (round: to nearest, ties to even)
//
// in two passes: the range, then y. The same float32 operations as the host
// evaluator's op (src/eval/host_eval_quantize.cc): x / scale is a division,
// NaN is left out of the range and gives y = 0, so y is the op's bit for bit.
// AVX2 or plain C++ by CpuIsa() (cpu_isa.h; an AVX-512 CPU runs the AVX2
// build: both passes are bound by memory).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// The scale and zero point DynamicQuantizeLinear gives a tensor.
struct DynamicQuantization {
  float scale = 1;
  std::int32_t zero_point = 0;  ///< in [0, 255]
};

/// The quantization of x[0, count), over OpenMP threads.
DynamicQuantization DynamicQuantizationOf(const float* x, std::int64_t count);

/// out[i] = saturate(round(x[i] / q.scale) + q.zero_point) - shift for
/// i < count, as float32 (exact: integers below 2^24), over OpenMP threads.
/// shift 0 gives y itself, cast to float; shift q.zero_point gives y minus
/// its zero point, the operand of an integer product (MatMulInteger-10).
void DynamicQuantizeToFloat(const float* x, float* out, std::int64_t count, DynamicQuantization q, float shift);

/// out[i] = x[i] / q.scale + q.zero_point - shift for i < count, over OpenMP
/// threads: the same without rounding or saturation, the float values the
/// quantization stands for (the output check's plans without fake
/// quantization, backend/runtime/verify.h).
void DynamicScaleToFloat(const float* x, float* out, std::int64_t count, DynamicQuantization q, float shift);

}  // namespace onnxfuse::backend
