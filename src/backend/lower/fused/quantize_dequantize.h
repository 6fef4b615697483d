// The QDQ format's fake quantization of an activation, QuantizeLinear then
// DequantizeLinear with the same scale and zero point, run in fused mode as
// one float pass of our kernel (backend/kernels/quantize_dequantize.h)
// instead of two host steps through an integer tensor.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// In fused mode, for a QuantizeLinear `id` of a float activation whose
/// quantized value is read by DequantizeLinear nodes alone (and is no graph
/// output), all with the same constant per-tensor scale and zero point:
/// emits one "quantize_dequantize" step in the activation's layout, writing
/// the output every DequantizeLinear shares, absorbs them and returns true.
/// The result equals the two ops' (src/eval/host_eval_quantize.cc) bit for
/// bit. Otherwise emits nothing and returns false.
/// Without fake quantization (Builder::fake_quantize false), in either mode,
/// any QuantizeLinear read by DequantizeLinear nodes alone and no graph
/// output is the identity instead: their outputs are the QuantizeLinear's
/// input, no step is emitted, and the result is true.
bool LowerQuantizeDequantize(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
