// Lowering one fusion group: its members in order, each folded, absorbed into
// the open chain (chain.cc), starting a chain, or lowered by its op's own
// lowering; a finished chain is emitted here (Flush: its anchor's lowering,
// then our swish or Gelu kernel where the chain ends in one), its steps made
// by chain_emit.cc.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/kernels/activation.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/host_step.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "backend/lower/core/views.h"
#include "backend/lower/fused/channel_scale.h"
#include "backend/lower/fused/dynamic_quantize.h"
#include "backend/lower/fused/int8_add.h"
#include "backend/lower/fused/int8_conv.h"
#include "backend/lower/fused/int8_qdq_matmul.h"
#include "backend/lower/fused/quantize_dequantize.h"
#include "backend/lower/ops/batch_norm.h"
#include "backend/lower/ops/binary.h"
#include "backend/lower/ops/broadcast_binary.h"
#include "backend/lower/ops/concat.h"
#include "backend/lower/ops/conv.h"
#include "backend/lower/ops/deconv.h"
#include "backend/lower/ops/einsum.h"
#include "backend/lower/ops/eltwise.h"
#include "backend/lower/ops/gather_rows.h"
#include "backend/lower/ops/grid_sample.h"
#include "backend/lower/ops/matmul.h"
#include "backend/lower/ops/normalization.h"
#include "backend/lower/ops/pool.h"
#include "backend/lower/ops/reduce.h"
#include "backend/lower/ops/resize.h"
#include "backend/lower/ops/select.h"
#include "backend/lower/ops/slice.h"
#include "backend/lower/ops/softmax.h"
#include "backend/lower/ops/std_math.h"
#include "backend/lower/recurrent/recurrent.h"
#include "eval/host_eval.h"

namespace onnxfuse::backend {

namespace {

using Kind = PostOp::Kind;

void EmitAnchor(Builder& b, const Chain& chain) {
  const std::string& op = b.graph.node(chain.anchor).op_type;
  if (op == "Conv") {
    if (!EmitInt8Conv(b, chain)) EmitConv(b, chain);
  }
  else if (op == "ConvTranspose") EmitDeconv(b, chain);
  else if (op == "Gemm") EmitGemm(b, chain);
  else if (op == "MatMul") {
    if (!EmitInt8QdqMatMul(b, chain)) EmitMatMul(b, chain);
  }
  else if (op == "BatchNormalization") EmitBatchNorm(b, chain);
  else if (!EmitInt8Add(b, chain)) EmitBinary(b, chain);
}

// A chain ending in swish or Gelu runs as its anchor with the other post-ops,
// then our kernel in place on the anchor's destination (backend/kernels/activation.h:
// several times faster than oneDNN's post-op here, which more than pays for
// the extra pass over the data). A float Conv that one of our own kernels
// takes whole applies swish in its epilogue instead, while the result is in
// registers.
void Flush(Builder& b, Chain chain) {
  const PostOp* last = chain.post_ops.empty() ? nullptr : &chain.post_ops.back();
  const bool swish = last && last->kind == Kind::kEltwise && last->alg == dnnl::algorithm::eltwise_swish && last->alpha == 1.f;
  const bool gelu = last && last->kind == Kind::kEltwise && last->alg == dnnl::algorithm::eltwise_gelu_erf;
  if (!b.fuse || !(swish || gelu)) return EmitAnchor(b, chain);
  const Node& anchor = b.graph.node(chain.anchor);
  if (swish && anchor.op_type == "Conv" && !DequantizeProducing(b, anchor.inputs.at(0)) && EmitConvOnOwnKernel(b, chain))
    return;
  const std::size_t first = last->member;  // swish: the Sigmoid, then the Mul; Gelu: the Div
  std::vector<NodeId> removed(chain.members.begin() + static_cast<std::ptrdiff_t>(first), chain.members.end());
  const ValueId out = chain.out;
  chain.post_ops.pop_back();
  chain.members.resize(first);
  chain.out = b.graph.node(removed.front()).inputs[0];
  EmitAnchor(b, chain);
  const Act& x = b.ActOf(chain.out, b.graph.node(removed.front()));
  std::string label;
  for (NodeId id : removed) label += (label.empty() ? "" : "+") + b.graph.node(id).name;
  const std::int64_t count = static_cast<std::int64_t>(x.md.get_size() / sizeof(float));
  const Node* pool = swish ? PoolReading(b, out) : nullptr;
  // Batch 1, 4-D: the means are per channel of one image.
  const bool one_image = x.dims.size() == 4 && x.dims[0] == 1;
  if (const auto blocks = pool && one_image ? ChannelVectorsOf(x.md, x.dims) : std::nullopt) {
    // Squeeze-and-excitation: the GlobalAveragePool of the result is taken in the same pass.
    const std::int64_t channels = x.dims[1], pixels = x.dims[2] * x.dims[3];
    const Dims pooled_dims = {1, channels, 1, 1};
    const Act pooled = b.NewAct(pooled_dims, PlainDesc(pooled_dims));
    CustomKernel kernel = [blocks = *blocks, channels, pixels](const std::vector<void*>& data) {
      SwishInPlaceWithMeans(static_cast<float*>(data[0]), blocks.blocks, pixels, blocks.lanes, channels,
                            static_cast<float*>(data[1]));
    };
    b.EmitCustom("swish", label + "+" + pool->name, {{0, Arg{x.slot, x.md, {}}}, {1, Arg{pooled.slot, pooled.md, {}}}},
                 std::move(kernel), x.md);
    b.SetAct(out, x);
    Absorb(b, {pool});
    b.SetAct(pool->outputs[0], pooled);
    return;
  }
  CustomKernel kernel = [count, swish](const std::vector<void*>& data) {
    auto* y = static_cast<float*>(data[0]);
    if (swish) SwishInPlace(y, count);
    else Gelu(y, y, count);
  };
  b.EmitCustom(swish ? "swish" : "gelu", swish ? label : label + "+Gelu", {{0, Arg{x.slot, x.md, {}}}},
               std::move(kernel), x.md);
  b.SetAct(out, x);
}

// Tensors with no elements (a 0-size graph input, an empty Slice or Split
// part) are only taken by the ops that select or re-view elements; any other
// reader is refused at build time, before a primitive sees a zero dim.
void RefuseEmptyInputs(const Builder& b, const Node& node) {
  static const std::set<std::string> kTakesEmpty = {"Split", "Slice", "Gather", "Identity", "Dropout",
                                                    "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Shape", "Size"};
  if (node.domain.empty() && kTakesEmpty.count(node.op_type)) return;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
    const ValueId v = node.inputs[i];
    if (v != kNoValue && b.IsAct(v) && Product(b.AnyActOf(v, node).dims) == 0)
      Unsupported(b, node, "input '" + b.graph.value(v).name + "' has no elements (shape " +
                               DimsString(b.AnyActOf(v, node).dims) + "): 0-size tensors are not supported here");
  }
}

// Every input known at build time (not an activation, nor a deferred product).
bool AllInputsConst(const Builder& b, const Node& node) {
  return std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) { return v == kNoValue || b.IsConst(v); });
}

}  // namespace

void LowerGroup(Builder& b, const std::vector<NodeId>& nodes, const NamedPattern* named) {
  std::optional<Chain> chain;
  for (NodeId id : nodes) {
    if (b.absorbed[id]) continue;
    const Node& node = b.graph.node(id);
    // Shape and Size of the value an open chain computes: the chain is done
    // (they are not its post-ops), and its result's dims fold them.
    if (chain && (node.op_type == "Shape" || node.op_type == "Size") && node.inputs.at(0) == chain->out)
      Flush(b, *chain), chain.reset();
    if (TryFold(b, id)) {
      b.Consume(node);
      continue;
    }
    // The QDQ format's fake quantization: one float pass, no integer tensor
    // (or none at all, without fake quantization).
    if ((b.fuse || !b.fake_quantize) && node.op_type == "QuantizeLinear") {
      if (chain && TakeQuantize(b, *chain, id)) {  // an int8 convolution writes the integer tensor
        b.Consume(node);
        Flush(b, *chain), chain.reset();
        DequantizeForFloatReaders(b, node);
        continue;
      }
      if (chain) Flush(b, *chain), chain.reset();
      if (LowerQuantize(b, id) || LowerQuantizeDequantize(b, id)) {
        b.Consume(node);
        continue;
      }
    }
    // Dynamic quantization's operands: one step of our kernel.
    if (node.op_type == "DynamicQuantizeLinear") {
      if (chain) Flush(b, *chain), chain.reset();
      if (LowerDynamicQuantize(b, id)) {
        b.Consume(node);
        continue;
      }
    }
    // Integer and bool values computed at run time: the host evaluator's
    // (a recurrent node's run-time sequence_lens: refused by EmitRecurrent).
    if (NeedsHostStep(b, node) && !IsRecurrent(node)) {
      if (chain) Flush(b, *chain), chain.reset();
      if (!LowerWhere(b, id) && !LowerGatherRows(b, id)) EmitHostStep(b, id);  // host steps take 0-size tensors
      b.Consume(node);
      continue;
    }
    RefuseEmptyInputs(b, node);
    // All inputs known, yet no build-time evaluator for the op: its first
    // input becomes an activation, so that every lowering finds one.
    if (!node.inputs.empty() && node.inputs[0] != kNoValue && !b.IsAct(node.inputs[0]) && AllInputsConst(b, node))
      b.ConstAsAct(node.inputs[0], node);
    if (chain && b.fuse && Attach(b, *chain, id, nodes, named)) continue;
    if (chain) Flush(b, *chain), chain.reset();
    if (b.fuse && named && named->start && named->start(b, id)) continue;
    // Their uses are consumed where the product is used.
    if (DeferChannelScale(b, id) || DeferScalarScale(b, id)) continue;
    if (StartsChain(b, node)) {
      chain = Chain{id, node.outputs.at(0), {id}, {}, {}, kNoNode};
    } else if (!LowerView(b, id) && !LowerSlice(b, id)) {
      const std::string& op = node.op_type;
      if (IsPooling(op)) EmitPool(b, id);
      else if (op == "Softmax" || op == "LogSoftmax") EmitSoftmax(b, id);
      else if ((op == "Max" || op == "Min") && LowerBroadcastBinary(b, id)) {}  // two inputs, both broadcast
      else if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") EmitVariadic(b, id);
      else if (op == "Concat") EmitConcat(b, id);
      else if (op == "PRelu") EmitPrelu(b, id);
      else if (op == "Resize" || op == "Upsample") ResizeOnOneDnn(b, node) ? EmitResize(b, id) : EmitHostStep(b, id);
      else if (op == "LayerNormalization") EmitLayerNormalization(b, id);
      else if (op == "InstanceNormalization") EmitInstanceNormalization(b, id);
      else if (op.rfind("Reduce", 0) == 0) EmitReduce(b, id);
      else if (IsStdUnary(node)) EmitStdUnary(b, id);
      else if (!EltwiseOf(b, node).empty()) EmitEltwise(b, id);
      else if (op == "Pow") EmitPow(b, id);  // an exponent of several values, or computed at run time
      else if (op == "Einsum" && LowerEinsum(b, id)) {}  // transposes, sums, batched matmuls (einsum.h)
      else if (op == "MatMul") EmitMatMulOfVector(b, id);  // a 1-D operand
      else if (op == "Clip" && b.graph.opset() >= 11) EmitClip(b, id);  // bounds computed at run time
      else if (op == "Where" && LowerWhere(b, id)) {}  // float data: a kernel of our own (select.h)
      else if (IsBinaryOp(op) && LowerBroadcastBinary(b, id)) {}  // both operands broadcast (broadcast_binary.h)
      else if (op == "GridSample" && LowerGridSample(b, id)) {}  // bilinear, nearest: a kernel of our own
      else if (IsRecurrent(node)) EmitRecurrent(b, id);
      else if (eval::HostEvaluable(node)) EmitHostStep(b, id);  // no primitive: the host evaluator's loop
      else
        UnsupportedOp(b, node);
    }
    b.Consume(node);
  }
  if (chain) Flush(b, *chain);
  b.ReleaseConsts(nodes);
}

}  // namespace onnxfuse::backend
