// int8 matrix products of the QDQ format, as ONNX Runtime's static quantizer
// (and `onnx-fuse quantize`) writes them:
//
//   x_q -> DequantizeLinear -> MatMul(B = DequantizeLinear(w_int8 [K, N])) [-> Add bias, ...]
//
// runs as one oneDNN int8 matmul: u8 or s8 source with its zero point, s8
// weights, per-column output scales x_scale * w_scale[n], a float32
// destination and the chain's post-ops on it. ONNX defines the float result
// as x_scale * w_scale[n] * sum_k (x_q - x_zero_point) * w_q[k, n]
// (Operators.md, DequantizeLinear-13, MatMul-13); oneDNN computes
// output_scale[n] * sum (oneDNN 2.6 developer guide, "Quantization" and
// "Matrix Multiplication"). A QuantizeLinear after the chain runs as its
// own quantize step (quantize_dequantize.h).
//
// Taken at fixed shapes only: where A's dims vary between a session's
// shapes the float product over the dequantized values stays, one matmul
// with run-time dims for every shape (any_shape_matmul.h). Saturation on
// CPUs without VNNI: as int8_conv.h (a u8 source and |w| <= 64 there).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/lower/core/chain.h"
#include "backend/lower/fused/quantize_dequantize.h"

namespace onnxfuse::backend {

/// The quantized operands of a MatMul of the QDQ format.
struct QuantizedMatMul {
  ValueId src = kNoValue;  ///< the integer tensor A dequantizes
  PerTensor src_quantization;
  std::shared_ptr<const Tensor> weights;  ///< w_int8, [K, N] (int_data)
  std::vector<float> weight_scales;       ///< one per column n
};

/// The quantized operands of `matmul` when it can run as an int8 matmul: A
/// the output of a DequantizeLinear of one constant per-tensor u8 or s8
/// quantization, of rank 2 to 4 and dims fixed across a session's shapes;
/// B a DequantizeLinear of a constant int8 [K, N] with zero points 0 and one
/// scale, or one per column (axis 1); on a CPU without VNNI, a u8 A and
/// every |w| <= 64. nullopt otherwise, with the reason in `why` (when not null).
std::optional<QuantizedMatMul> QuantizedMatMulOf(Builder& b, const Node& matmul, std::string* why = nullptr);

/// Emits a MatMul chain whose A is a DequantizeLinear output: as one int8
/// matmul when its operands allow (QuantizedMatMulOf), A is an integer Act
/// and oneDNN has a kernel for it that is not `ref:`; otherwise as the float
/// product (EmitMatMul) after a dequantize step where A is only an integer
/// tensor, its matmul step's Step::note saying why it is not int8. False,
/// with nothing done, for any other MatMul: EmitMatMul's.
bool EmitInt8QdqMatMul(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
