#include "backend/lower/fused/int8_add.h"

#include <cmath>
#include <string>
#include <utility>

#include "backend/kernels/quantize_linear.h"
#include "backend/lower/fused/int8_conv.h"
#include "ir/fake_quantization.h"

namespace onnxfuse::backend {

std::optional<QuantizedAddOperands> QuantizedAddOf(Builder& b, const Node& add) {
  if (!b.fuse || !b.fake_quantize || add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2)
    return std::nullopt;
  if (add.inputs[0] == add.inputs[1]) return std::nullopt;
  const TensorType& out = b.graph.value(add.outputs.at(0)).type;
  QuantizedAddOperands ops;
  for (int k = 0; k < 2; ++k) {
    const ValueId in = add.inputs[static_cast<std::size_t>(k)];
    const Node* dq = DequantizeProducing(b, in);
    if (!dq || dq->inputs.at(0) == kNoValue || !b.graph.value(in).type.has_shape ||
        b.graph.value(in).type.dims != out.dims)
      return std::nullopt;
    if (!SourceQuantization(b, dq->inputs[0], *dq, add)) return std::nullopt;
    (k == 0 ? ops.a : ops.b) = dq->inputs[0];
  }
  // The QuantizeLinear after it, perhaps through a Relu.
  ValueId y = add.outputs[0];
  for (int hop = 0; hop < 2; ++hop) {
    const Value& value = b.graph.value(y);
    if (value.is_graph_output || value.consumers.size() != 1) return std::nullopt;
    const Node& next = b.graph.node(value.consumers[0]);
    if (!next.domain.empty()) return std::nullopt;
    if (next.op_type == "Relu" && !ops.relu) {
      ops.relu = true;
      y = next.outputs.at(0);
      continue;
    }
    if (next.op_type != "QuantizeLinear" || next.inputs.at(0) != y) return std::nullopt;
    const auto readers = DequantizeReaders(b.graph, next);
    if (!readers) return std::nullopt;
    const auto shared = SharedQuantization(b, next, *readers);
    if (!shared || !IsInt8Type(shared->type)) return std::nullopt;
    ops.quantize = value.consumers[0];
    return ops;
  }
  return std::nullopt;
}

bool TakeQuantizeAfterAdd(Builder& b, Chain& chain, NodeId id) {
  if (chain.quantize != kNoNode || !chain.affine.scale.empty()) return false;
  const Node& anchor = b.graph.node(chain.anchor);
  const auto ops = QuantizedAddOf(b, anchor);
  if (!ops || ops->quantize != id || !b.IsInt8Act(ops->a) || !b.IsInt8Act(ops->b)) return false;
  const bool relu_only = chain.post_ops.size() == 1 && chain.post_ops[0].kind == PostOp::Kind::kEltwise &&
                         chain.post_ops[0].alg == dnnl::algorithm::eltwise_relu && chain.post_ops[0].alpha == 0.f;
  if (!(ops->relu ? relu_only : chain.post_ops.empty())) return false;
  const Node& q = b.graph.node(id);
  if (q.inputs.at(0) != chain.out) return false;
  chain.quantize = id;
  chain.members.push_back(id);
  chain.out = q.outputs.at(0);
  return true;
}

bool EmitInt8Add(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (node.op_type != "Add") return false;
  if (chain.quantize == kNoNode) {
    // The float Add: each input that only exists as an integer tensor (its
    // DequantizeLinear's readers all looked int8 when it was made) dequantized.
    for (const ValueId in : node.inputs)
      if (const Node* dq = in == kNoValue ? nullptr : DequantizeProducing(b, in)) DequantizeIfOnlyInteger(b, *dq, node);
    return false;
  }
  const auto ops = QuantizedAddOf(b, node);
  const Node& quantize = b.graph.node(chain.quantize);
  const auto readers = DequantizeReaders(b.graph, quantize);
  const auto out = readers ? SharedQuantization(b, quantize, *readers) : std::nullopt;
  if (!ops || !out)
    throw Error(ErrorKind::kInternal, "internal error: " + node.name + ": its quantized Add changed after it was taken");
  const Act& a = b.AnyActOf(ops->a, node);
  const Act& other = b.AnyActOf(ops->b, node);
  const Arg src_a = IsDense(a.md) ? Arg{a.slot, a.md, {}} : b.UseQuantized(ops->a, WithDataType(PlainDesc(a.dims), a.md.data_type()), node);
  const Arg src_b = b.UseQuantized(ops->b, WithDataType(src_a.md, other.md.data_type()), node);
  const QuantizedOperand qa{nullptr, KernelType(a.elem_type), a.scale, static_cast<std::int32_t>(a.zero_point)};
  const QuantizedOperand qb{nullptr, KernelType(other.elem_type), other.scale, static_cast<std::int32_t>(other.zero_point)};
  const dnnl::memory::desc md = WithDataType(src_a.md, OneDnnType(out->type));
  Act dst = b.NewAct(a.dims, md);
  dst.elem_type = out->type, dst.scale = out->scale, dst.zero_point = out->zero_point;
  const auto count = static_cast<std::int64_t>(md.get_size());
  const bool relu = ops->relu;
  const Int8Type y_type = KernelType(out->type);
  const float y_scale = out->scale;
  const auto y_zero = static_cast<std::int32_t>(out->zero_point);
  b.EmitCustom("quantized_add", ChainLabel(b, chain), {{0, src_a}, {1, src_b}, {2, Arg{dst.slot, md, {}}}},
               [=](const std::vector<void*>& data) {
                 QuantizedOperand x = qa, y = qb;
                 x.data = data[0], y.data = data[1];
                 QuantizedAdd(x, y, relu, data[2], y_type, y_scale, y_zero, count);
               },
               md);
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
