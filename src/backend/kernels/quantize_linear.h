// QuantizeLinear and DequantizeLinear of one per-tensor scale and zero point
// over dense buffers (ONNX Operators.md, QuantizeLinear-13 and
// DequantizeLinear-13), for activations that stay 8-bit integers between
// int8 convolutions:
//
//   q = saturate(round(x / scale) + zero_point)   (round: to nearest, ties to even)
//   y = (q - zero_point) * scale
//
// The same float32 operations as the host evaluator's two ops
// (src/eval/host_eval_quantize.cc): x / scale is a division, not a
// multiplication by the reciprocal, so q is the op's bit for bit. AVX2 or
// plain C++ by CpuIsa() (cpu_isa.h; an AVX-512 CPU runs the AVX2 build: the
// passes are bound by memory, not by vector width).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// The 8-bit integer type of a quantized activation.
enum class Int8Type { kUint8, kInt8 };

/// q[i] = saturate(round(x[i] / scale) + zero_point) for i < count, as
/// uint8 or int8 bytes (`type`), over OpenMP threads. NaN gives the type's
/// minimum, as QuantizeLinear saturates it. `zero_point` lies in the type's range.
void QuantizeLinear(const float* x, void* q, Int8Type type, std::int64_t count, float scale, std::int32_t zero_point);

/// y[i] = (q[i] - zero_point) * scale for i < count, over OpenMP threads.
void DequantizeLinear(const void* q, Int8Type type, float* y, std::int64_t count, float scale, std::int32_t zero_point);

/// One 8-bit tensor's bytes and per-tensor quantization.
struct QuantizedOperand {
  const void* data;
  Int8Type type;
  float scale;
  std::int32_t zero_point;
};

/// The QDQ format's residual Add in one pass over bytes, for i < count:
///   y[i] = QuantizeLinear(max?(DequantizeLinear(a[i]) + DequantizeLinear(b[i]), 0))
/// with `relu` taking the max, y in `y_type` at (y_scale, y_zero_point): the
/// float32 operations of the three ops, in their order (ONNX Runtime's
/// QLinearAdd computes the same), bit for bit, over OpenMP threads.
void QuantizedAdd(const QuantizedOperand& a, const QuantizedOperand& b, bool relu, void* y, Int8Type y_type,
                  float y_scale, std::int32_t y_zero_point, std::int64_t count);

}  // namespace onnxfuse::backend
