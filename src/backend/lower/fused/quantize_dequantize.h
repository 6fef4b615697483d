// The QDQ format's fake quantization of an activation, QuantizeLinear then
// DequantizeLinear with the same scale and zero point, run in fused mode as
// one float pass of our kernel (backend/kernels/quantize_dequantize.h)
// instead of two host steps through an integer tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/lower/core/builder.h"
#include "ir/fake_quantization.h"

namespace onnxfuse::backend {

/// A per-tensor quantization: scale, zero point and the zero point's type
/// (onnx::TensorProto::DataType).
struct PerTensor {
  float scale = 1;
  std::int64_t zero_point = 0;
  std::int32_t type = onnx::TensorProto::UINT8;
  bool operator==(const PerTensor& o) const {
    return scale == o.scale && zero_point == o.zero_point && type == o.type;
  }
};

/// True for UINT8 and INT8 (onnx::TensorProto::DataType).
bool IsInt8Type(std::int32_t type);
/// oneDNN's u8 or s8 for UINT8 or INT8.
dnnl::memory::data_type OneDnnType(std::int32_t type);
/// `md`'s layout with another element type.
dnnl::memory::desc WithDataType(const dnnl::memory::desc& md, dnnl::memory::data_type type);

/// Inputs 1 (scale) and 2 (zero point, optional) of a QuantizeLinear or
/// DequantizeLinear `node` as one constant per-tensor quantization, or
/// nullopt. Without a zero point the type is `default_type` (QuantizeLinear:
/// uint8; DequantizeLinear: its input's type).
std::optional<PerTensor> PerTensorOf(Builder& b, const Node& node, std::int32_t default_type);

/// The constant per-tensor quantization QuantizeLinear `q` and all its
/// `readers` (ir/fake_quantization.h's DequantizeReaders) share,
/// with a positive scale and a zero point in its type's range; nullopt otherwise.
std::optional<PerTensor> SharedQuantization(Builder& b, const Node& q, const std::vector<const Node*>& readers);

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
