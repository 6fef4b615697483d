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
#include "backend/kernels/broadcast_binary.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/kernel_operand.h"
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

// One binary step dst = alg(src0, src1) (then times `scale`) into a new
// plain tensor of `out` dims; returns dst. Where oneDNN's binary has only its
// reference kernel for the operands (a 5-D Sum of [1,2,3,4,5] and
// [1,2,1,4,1]), our BroadcastBinary runs it, the scale an eltwise step after.
Arg EmitBinaryStep(Builder& b, const Node& node, algorithm alg, const Arg& src0, const Arg& src1, const Dims& out,
                   float scale = 1.f) {
  Act dst = b.NewAct(out, PlainDesc(out));
  dnnl::post_ops ops;
  if (scale != 1.f) ops.append_eltwise(1.f, algorithm::eltwise_linear, scale, 0.f);
  dnnl::binary::desc desc(alg, src0.md, src1.md, dst.md);
  auto pd = MakePd<dnnl::binary::primitive_desc>(b, node, desc, b.Attr(ops));
  const Arg result{dst.slot, dst.md, {}};
  if (!IsSlowPrimitive("binary", pd) || !IsPlainEquivalent(src0.md) || !IsPlainEquivalent(src1.md) ||
      (alg != algorithm::binary_add && alg != algorithm::binary_max && alg != algorithm::binary_min)) {
    b.Emit(pd, "binary", node.name, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, result}}, dst.md);
    return result;
  }
  const BinaryAlg own = alg == algorithm::binary_add ? BinaryAlg::kAdd
                        : alg == algorithm::binary_max ? BinaryAlg::kMax
                                                       : BinaryAlg::kMin;
  const BroadcastPlan<2> plan = PlanBroadcast<2>(out, {DimsOf(src0.md), DimsOf(src1.md)});
  b.EmitCustom("binary", node.name, {{0, src0}, {1, src1}, {2, result}},
               [own, plan](const std::vector<void*>& data) {
                 BroadcastBinary(own, static_cast<const float*>(data[0]), static_cast<const float*>(data[1]),
                                 static_cast<float*>(data[2]), plan);
               },
               dst.md, "onnxfuse:broadcast_binary");
  if (scale != 1.f) {
    const dnnl::eltwise_forward::primitive_desc linear(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algorithm::eltwise_linear, dst.md, scale, 0.f),
        b.Attr(), b.engine);
    b.Emit(linear, "eltwise", node.name, {{DNNL_ARG_SRC, result}, {DNNL_ARG_DST, result}}, dst.md);
  }
  return result;
}

// The layout EmitBinary's src0 takes (OpInput): an activation's own when it
// is plain or a convolution's layout (fused), else plain.
memory::desc Src0Layout(Builder& b, const Node& node, ValueId v) {
  const memory::desc& md = b.ActOf(v, node).md;
  return b.fuse && (IsPlainEquivalent(md) || IsConvLayout(md)) ? md : PlainDesc(b.ActOf(v, node).dims);
}

// The layout EmitBinary's src1 takes, src0 being in `src0`: src0's for an
// activation of the output's dims, else BroadcastOperand's (plain for a
// run-time operand of lower rank, else BroadcastLayout's).
memory::desc Src1Layout(Builder& b, const Node& node, ValueId other, const memory::desc& src0, const Dims& out,
                        algorithm alg) {
  if (b.IsAct(other) && b.ActOf(other, node).dims == out) return src0;
  if (!b.IsConst(other) && b.ActOf(other, node).dims.size() != out.size())
    return PlainDesc(BroadcastDimsOf(b, node, other, out.size()));
  return BroadcastLayout(b, node, other, src0, out.size(), alg);
}

using BinaryPd = dnnl::binary::primitive_desc;

// The binary anchor's descriptor for `chain` (MakeChainPd: the longest fast
// prefix of its post-ops) with src0 and src1 in the given layouts; `*all_fast`
// as MakeChainPd's.
BinaryPd ChainBinaryPd(Builder& b, const Chain& chain, const Dims& out, algorithm alg, const memory::desc& src0,
                       const memory::desc& src1, std::size_t& count, bool* all_fast = nullptr) {
  const dnnl::binary::desc desc(alg, src0, src1, src0);
  return MakeChainPd<BinaryPd>(
      b, chain, out, "binary", count,
      [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
        return dst.is_zero() ? BinaryPd(desc, attr, b.engine) : BinaryPd();  // it writes src0's layout
      },
      all_fast);
}

}  // namespace

bool OneDnnBinaryIsSlow(Builder& b, const Node& node) {
  if (!node.domain.empty() || node.num_explicit_inputs != 2 || !IsBinaryOp(node.op_type)) return false;
  const ValueId x = node.inputs[0], y = node.inputs[1];
  if (b.IsConst(x) && b.IsConst(y)) return false;
  if (StorageOf(b, x, node) != onnx::TensorProto::FLOAT || StorageOf(b, y, node) != onnx::TensorProto::FLOAT)
    return false;
  const Dims dx = b.DimsOfValue(x, node), dy = b.DimsOfValue(y, node);
  Dims out;
  try {
    out = BroadcastDims(dx, dy);
  } catch (const std::invalid_argument&) {
    return false;  // EmitBinary names the node and the shapes
  }
  const bool x_full = b.IsAct(x) && dx == out;
  const ValueId full = x_full ? x : y, other = x_full ? y : x;
  if (!b.IsAct(full) || b.DimsOfValue(full, node) != out || out.empty()) return false;
  const std::string& op = node.op_type;
  const algorithm alg = op == "Add" ? algorithm::binary_add
                        : op == "Sub" ? algorithm::binary_sub
                        : op == "Mul" ? algorithm::binary_mul
                                      : algorithm::binary_div;
  // The descriptors EmitBinary makes for the bare node: src0 in OpInput's
  // layout; the other input in src0's layout when it has the output's dims,
  // else in BroadcastLayout's.
  const memory::desc src0 = Src0Layout(b, node, full);
  const memory::desc src1 = Src1Layout(b, node, other, src0, out, alg);
  try {
    return IsSlowImpl("binary",
                      dnnl::binary::primitive_desc(dnnl::binary::desc(alg, src0, src1, src0), b.Attr(), b.engine)
                          .impl_info_str());
  } catch (const dnnl::error&) {
    return false;  // EmitBinary reports it
  }
}

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
  // src0 in a channels-last or blocked layout on which oneDNN runs the chain
  // only on its reference kernels, however it is split, where it runs it on
  // jit ones plain (a Sigmoid post-op over channels padded to a block of 16,
  // which oneDNN's jit eltwise leaves to its reference kernel): read plain.
  bool read_plain = false;
  if (const memory::desc own = Src0Layout(b, node, node.inputs[first]); !IsPlainEquivalent(own)) {
    auto slow_with = [&](const memory::desc& src0_md) {
      std::size_t n = 0;
      bool all_fast = false;
      try {
        ChainBinaryPd(b, chain, out, alg, src0_md, Src1Layout(b, node, other, src0_md, out, alg), n, &all_fast);
      } catch (const Error&) {
        return true;  // no implementation
      }
      return !all_fast;
    };
    read_plain = slow_with(own) && !slow_with(PlainDesc(out));
  }
  // A rank-0 result keeps dims [] (its memory is one element of dims {1}).
  Arg src0 = read_plain ? b.UsePlain(node.inputs[first], node) : OpInput(b, node, first);
  // The same shape as src0: read in src0's layout; else broadcast (BroadcastLayout).
  const Arg src1 = b.IsAct(other) && b.ActOf(other, node).dims == out
                       ? b.Use(other, src0.md, node)
                       : BroadcastOperand(b, node, other, out.size(), BroadcastLayout(b, node, other, src0.md, out.size(), alg));
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}};
  // The longest prefix of the post-ops on which oneDNN's binary stays off its
  // reference kernel (ChooseAnchor); the rest run as tail steps (FinishChain).
  // A full-size post-op operand in another layout than src0's is such a case:
  // RAFT's GRU update (1 - z) * h, z channels-last and h plain, ran ref:any.
  std::size_t count = 0;
  const BinaryPd pd = ChainBinaryPd(b, chain, out, alg, src0.md, src1.md, count);
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
  for (std::size_t k = 1; k < inputs.size(); ++k)
    acc = EmitBinaryStep(b, node, alg, acc, BroadcastOperand(b, node, inputs[k], out.size()), out,
                         k + 1 == inputs.size() ? mean_scale : 1.f);
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
