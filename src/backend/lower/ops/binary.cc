// Broadcasting binary primitives: Add, Sub, Mul and Div as chain anchors
// (binary_forward with the chain's post-ops), and Max, Min, Sum, Mean and Clip
// with run-time bounds as sequences of binary steps on plain buffers.
#include "backend/lower/ops/binary.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/host_eval.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "backend/lower/core/onednn_limits.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

using dnnl::algorithm;
using dnnl::memory;

// The dims of operand `v` of a broadcasting binary op with `rank` dims
// (leading 1s added, ONNX multidirectional broadcasting).
Dims BroadcastDimsOf(Builder& b, const Node& node, ValueId v, std::size_t rank) {
  return ExpandRank(b.IsConst(v) ? b.Const(v, node).dims : b.ActOf(v, node).dims, rank);
}

// Operand `v` of a broadcasting binary op with `rank` dims, in `layout` (plain
// when zero): a constant's host memory, or the run-time tensor's buffer.
Arg BroadcastOperand(Builder& b, const Node& node, ValueId v, std::size_t rank, memory::desc layout = {}) {
  const Dims dims = BroadcastDimsOf(b, node, v, rank);
  // A run-time operand of lower rank is read plain: a reorder cannot add its leading 1s.
  if (layout.is_zero() || (!b.IsConst(v) && b.ActOf(v, node).dims.size() != rank)) layout = PlainDesc(dims);
  if (b.IsConst(v)) {
    const Tensor& t = b.Const(v, node);
    if (t.elem_type != onnx::TensorProto::FLOAT) Unsupported(b, node, "integer tensors are not supported");
    const memory::desc plain = PlainDesc(dims);
    if (layout == plain) return Arg{-1, plain, b.HostMemory(plain, t.data.data())};
    return Arg{-1, layout, b.Prepack(b.HostView(plain, t.data.data()), layout)};
  }
  if (IsPlainEquivalent(layout)) {  // the leading 1s are the descriptor's alone
    Arg arg = b.UsePlain(v, node);
    arg.md = layout;
    return arg;
  }
  return b.Use(v, layout, node);
}

// The layout of broadcast operand `v` (`rank` dims) for a binary step on
// `src0`: plain, unless oneDNN's binary runs its reference code on that and a
// jit one with the operand blocked as src0 is (oneDNN 2.6 on AVX2 takes a
// per-channel operand of an nChw8c src0 only so: ref:any, ~100x slower).
// Only the forms oneDNN 2.6.3's jit:uni binary reads right may be blocked
// (BlockedOperandRight, onednn_limits.h).
memory::desc BroadcastLayout(Builder& b, const Node& node, ValueId v, const memory::desc& src0, std::size_t rank,
                             algorithm alg) {
  const Dims dims = BroadcastDimsOf(b, node, v, rank);
  const memory::desc plain = PlainDesc(dims);
  const memory::desc blocked = BlockedOperandRight(dims, src0.dims()) ? WithBlockingOf(src0, dims) : memory::desc();
  auto fast = [&](const memory::desc& md) {
    try {
      return !IsSlowImpl("binary", dnnl::binary::primitive_desc(dnnl::binary::desc(alg, src0, md, src0), b.Attr(),
                                                                 b.engine).impl_info_str());
    } catch (const dnnl::error&) {
      return false;
    }
  };
  return blocked.is_zero() || fast(plain) || !fast(blocked) ? plain : blocked;
}

// One binary step dst = alg(src0, src1) (then `ops`) into a new plain tensor
// of `out` dims; returns dst.
Arg EmitBinaryStep(Builder& b, const Node& node, algorithm alg, const Arg& src0, const Arg& src1, const Dims& out,
                   const dnnl::post_ops& ops = dnnl::post_ops()) {
  Act dst = b.NewAct(out, PlainDesc(out));
  dnnl::binary::desc desc(alg, src0.md, src1.md, dst.md);
  auto pd = MakePd<dnnl::binary::primitive_desc>(b, node, desc, b.Attr(ops));
  b.Emit(pd, "binary", node.name,
         {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  return Arg{dst.slot, dst.md, {}};
}

}  // namespace

void EmitBinary(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  Chain chain = chain_in;
  const std::string& op = node.op_type;
  Dims d0 = b.DimsOfValue(node.inputs.at(0), node), d1 = b.DimsOfValue(node.inputs.at(1), node), out;
  try {
    out = BroadcastDims(d0, d1);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  std::size_t first = 0;  // oneDNN's src0 must have the destination's shape
  if (!(b.IsAct(node.inputs[0]) && d0 == out)) {
    if (!(b.IsAct(node.inputs[1]) && d1 == out))
      Unsupported(b, node, "neither input is a run-time tensor of the output's shape");
    first = 1;
    // Operands swapped: c - x = -(x - c), c / x = (x / c)^-1, as an eltwise
    // post-op on the step itself, ahead of the chain's own.
    if (op == "Sub" || op == "Div")
      chain.post_ops.insert(chain.post_ops.begin(),
                            PostOp{PostOp::Kind::kEltwise, op == "Sub" ? algorithm::eltwise_linear : algorithm::eltwise_pow,
                                   op == "Sub" ? -1.f : 1.f, op == "Sub" ? 0.f : -1.f, kNoValue, {}, 0});
    MergeLinearSteps(chain.post_ops);
  }
  const algorithm alg = op == "Add" ? algorithm::binary_add
                  : op == "Sub" ? algorithm::binary_sub
                  : op == "Mul" ? algorithm::binary_mul
                                : algorithm::binary_div;
  ValueId other = node.inputs[1 - first];
  Arg src0 = OpInput(b, node, first);  // a rank-0 result keeps dims [] (its memory is one element of dims {1})
  // The same shape as src0: read in src0's layout; else broadcast (BroadcastLayout).
  const Arg src1 = b.IsAct(other) && b.ActOf(other, node).dims == out
                       ? b.Use(other, src0.md, node)
                       : BroadcastOperand(b, node, other, out.size(), BroadcastLayout(b, node, other, src0.md, out.size(), alg));
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}};
  // The longest prefix of the post-ops on which oneDNN's binary stays off its
  // reference kernel (ChooseAnchor); the rest run as tail steps (FinishChain).
  // A full-size post-op operand in another layout than src0's is such a case:
  // RAFT's GRU update (1 - z) * h, z channels-last and h plain, ran ref:any.
  const dnnl::binary::desc desc(alg, src0.md, src1.md, src0.md);
  std::size_t count = 0;
  using BinaryPd = dnnl::binary::primitive_desc;
  const BinaryPd pd =
      MakeChainPd<BinaryPd>(b, chain, out, "binary", count, [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
        return dst.is_zero() ? BinaryPd(desc, attr, b.engine) : BinaryPd();  // it writes src0's layout
      });
  MakePostOps(b, chain, out, args, count);  // the post-ops' operands
  FinishChain(b, chain, pd, "binary", out, std::move(args), {src0.slot, src1.slot}, count, DNNL_ARG_SRC_0);
}

void EmitVariadic(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  std::vector<ValueId> inputs;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
    if (node.inputs[i] != kNoValue) inputs.push_back(node.inputs[i]);
  if (inputs.empty())
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": no inputs");
  Dims out = b.DimsOfValue(inputs[0], node);
  try {
    for (ValueId v : inputs) out = BroadcastDims(out, b.DimsOfValue(v, node));
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  // oneDNN's binary writes src0's shape: start from an input of the output's
  // shape (the ops are commutative), broadcast the others onto it.
  auto start = std::find_if(inputs.begin(), inputs.end(),
                            [&](ValueId v) { return b.IsAct(v) && b.ActOf(v, node).dims == out; });
  if (start == inputs.end()) Unsupported(b, node, "no run-time input has the output's shape " + DimsString(out));
  std::iter_swap(inputs.begin(), start);
  if (inputs.size() == 1) {  // the input itself, in any layout, as for Identity (LowerView)
    const Arg src = b.UseAsIs(inputs[0], node);
    b.SetAct(node.outputs[0], Act{src.slot, src.md, out});
    return;
  }
  const float mean_scale = op == "Mean" ? 1.f / static_cast<float>(inputs.size()) : 1.f;
  Arg acc = b.UsePlain(inputs[0], node);
  const algorithm alg = op == "Max" ? algorithm::binary_max : op == "Min" ? algorithm::binary_min : algorithm::binary_add;
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    dnnl::post_ops ops;
    if (k + 1 == inputs.size() && mean_scale != 1.f) ops.append_eltwise(1.f, algorithm::eltwise_linear, mean_scale, 0.f);
    acc = EmitBinaryStep(b, node, alg, acc, BroadcastOperand(b, node, inputs[k], out.size()), out, ops);
  }
  b.SetAct(node.outputs[0], Act{acc.slot, acc.md, out});
}

void EmitClip(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const Dims dims = b.ActOf(node.inputs.at(0), node).dims;
  Arg cur = b.UsePlain(node.inputs[0], node);
  // min(max(x, min), max): all max where min > max, as ONNX Clip-11 says.
  for (const auto& [input, alg] : {std::pair{1, algorithm::binary_max}, std::pair{2, algorithm::binary_min}}) {
    const auto i = static_cast<std::size_t>(input);
    if (node.num_explicit_inputs <= i || node.inputs[i] == kNoValue) continue;
    const ValueId v = node.inputs[i];
    if (Product(b.DimsOfValue(v, node)) != 1) Unsupported(b, node, "min and max must be scalars");
    cur = EmitBinaryStep(b, node, alg, cur, BroadcastOperand(b, node, v, dims.size()), dims);
  }
  b.SetAct(node.outputs[0], Act{cur.slot, cur.md, dims});
}

}  // namespace onnxfuse::backend
