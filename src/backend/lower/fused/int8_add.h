// The QDQ format's Add of two quantized activations (a residual Add), as
// ONNX Runtime's static quantizer writes it:
//
//   Add(DequantizeLinear(a_q), DequantizeLinear(b_q)) [-> Relu] -> QuantizeLinear -> y_q
//
// runs as one pass of our kernel over the 8-bit tensors
// (backend/kernels/quantize_linear.h, QuantizedAdd): each input dequantized
// at its own scale and zero point, added, requantized at y's; the float32
// operations of the ops themselves, so the result equals the unfused plan's
// bit for bit. ONNX Runtime's QLinearAdd (com.microsoft) defines the same
// arithmetic. The integer tensors come from int8 convolutions or quantize
// steps (int8_conv.h), and y_q is what the next ones read.
#pragma once

#include <optional>

#include "backend/lower/core/chain.h"
#include "backend/lower/fused/quantize_dequantize.h"

namespace onnxfuse::backend {

/// The quantized operands of Add `add` when it can run as QuantizedAdd: two
/// different inputs, each the output of a DequantizeLinear of one constant
/// per-tensor u8 or s8 quantization, of the same dims as the Add's output;
/// its output read only by a QuantizeLinear (directly or through one Relu),
/// no graph output, whose DequantizeLinear readers share one u8 or s8
/// quantization. Fused mode with fake quantization only.
struct QuantizedAddOperands {
  ValueId a = kNoValue, b = kNoValue;  ///< the integer tensors the two inputs dequantize
  NodeId quantize = kNoNode;           ///< the QuantizeLinear that ends it
  bool relu = false;
};
std::optional<QuantizedAddOperands> QuantizedAddOf(Builder& b, const Node& add);

/// At QuantizeLinear `q`: when `chain`'s anchor is such an Add whose
/// operands are integer Acts, its post-ops nothing or the Relu, and `q` its
/// QuantizeLinear: makes `q` the chain's end (Chain::quantize, Chain::out)
/// and returns true. Otherwise changes nothing and returns false.
bool TakeQuantizeAfterAdd(Builder& b, Chain& chain, NodeId q);

/// Emits an Add chain: as QuantizedAdd when TakeQuantizeAfterAdd ended it,
/// and returns true. Otherwise makes each input that is only an integer
/// tensor float (a dequantize step) and returns false: EmitBinary follows.
bool EmitInt8Add(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
