#include "backend/lower/fused/quantize_dequantize.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backend/kernels/quantize_dequantize.h"
#include "eval/host_eval.h"
#include "ir/fake_quantization.h"

namespace onnxfuse::backend {

bool IsInt8Type(std::int32_t type) { return type == onnx::TensorProto::UINT8 || type == onnx::TensorProto::INT8; }

dnnl::memory::data_type OneDnnType(std::int32_t type) {
  return type == onnx::TensorProto::UINT8 ? dnnl::memory::data_type::u8 : dnnl::memory::data_type::s8;
}

dnnl::memory::desc WithDataType(const dnnl::memory::desc& md, dnnl::memory::data_type type) {
  dnnl_memory_desc_t data = md.data;
  data.data_type = static_cast<dnnl_data_type_t>(type);
  return dnnl::memory::desc(data);
}

std::optional<PerTensor> PerTensorOf(Builder& b, const Node& node, std::int32_t default_type) {
  const ValueId scale = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  const ValueId zero = node.inputs.size() > 2 ? node.inputs[2] : kNoValue;
  if (scale == kNoValue || !b.HasConstData(scale) || (zero != kNoValue && !b.HasConstData(zero))) return std::nullopt;
  const Tensor& s = b.Const(scale, node);
  if (s.NumElements() != 1 || s.data.size() != 1) return std::nullopt;
  PerTensor p{s.data[0], 0, default_type};
  if (zero != kNoValue) {
    const Tensor& z = b.Const(zero, node);
    if (z.NumElements() != 1 || z.int_data.size() != 1) return std::nullopt;
    p.zero_point = z.int_data[0];
    p.type = z.DataType();
  }
  return p;
}

std::optional<PerTensor> SharedQuantization(Builder& b, const Node& q, const std::vector<const Node*>& readers) {
  const auto quantize = PerTensorOf(b, q, onnx::TensorProto::UINT8);
  if (!quantize || !(quantize->scale > 0)) return std::nullopt;
  for (const Node* dq : readers) {
    const auto dequantize = PerTensorOf(b, *dq, b.graph.value(q.outputs[0]).type.elem_type);
    if (!dequantize || !(*quantize == *dequantize)) return std::nullopt;
  }
  const auto range = eval::QuantizedRange(quantize->type);
  if (!range || range->first > quantize->zero_point || quantize->zero_point > range->second) return std::nullopt;
  return quantize;
}

bool LowerQuantizeDequantize(Builder& b, NodeId id) {
  const Node& q = b.graph.node(id);
  if ((!b.fuse && b.fake_quantize) || q.op_type != "QuantizeLinear" || !q.domain.empty() || q.outputs.empty())
    return false;
  const ValueId x = q.inputs.at(0);
  if (!b.IsAct(x) || b.IsIntAct(x)) return false;
  // Every reader a DequantizeLinear of the quantized value (ONNX Runtime's
  // QDQ models give each consumer its own).
  const auto readers = DequantizeReaders(b.graph, q);
  if (!readers) return false;
  if (!b.fake_quantize) {
    Absorb(b, *readers);
    for (const Node* dq : *readers) b.SetAct(dq->outputs.at(0), b.ActOf(x, q));
    return true;
  }
  const auto quantize = SharedQuantization(b, q, *readers);
  if (!quantize) return false;
  const auto range = eval::QuantizedRange(quantize->type);

  Arg src = IsDense(b.ActOf(x, q).md) ? b.UseAsIs(x, q) : b.UsePlain(x, q);  // the kernel runs over all bytes
  Act dst = b.NewAct(b.ActOf(x, q).dims, src.md);
  const std::int64_t count = static_cast<std::int64_t>(src.md.get_size() / sizeof(float));
  const float scale = quantize->scale;
  const auto low = static_cast<float>(range->first - quantize->zero_point);
  const auto high = static_cast<float>(range->second - quantize->zero_point);
  std::string label = q.name;
  for (const Node* dq : *readers) label += "+" + dq->name;
  b.EmitCustom("quantize_dequantize", label, {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
               [count, scale, low, high](const std::vector<void*>& data) {
                 QuantizeDequantize(static_cast<const float*>(data[0]), static_cast<float*>(data[1]), count, scale,
                                    low, high);
               },
               dst.md);
  Absorb(b, *readers);
  for (const Node* dq : *readers) b.SetAct(dq->outputs.at(0), dst);
  return true;
}

}  // namespace onnxfuse::backend
