// Chains: an anchor primitive and the group members absorbed into it (lower.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include <spdlog/spdlog.h>

#include "attrs.h"
#include "lower.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

using Kind = PostOp::Kind;
constexpr std::size_t kMaxPostOps = 32;  // oneDNN's limit

bool IsBinaryOp(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div"; }

bool StartsChain(Builder& b, const Node& node) {
  const std::string& op = node.op_type;
  if (!node.domain.empty()) return false;
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul" || op == "BatchNormalization") return true;
  return IsBinaryOp(op) && (b.IsAct(node.inputs[0]) || b.IsAct(node.inputs[1]));
}

// Fully known inferred dims of a value, or empty.
Dims KnownDims(const Builder& b, ValueId v) {
  const TensorType& t = b.graph.value(v).type;
  if (!t.has_shape) return {};
  for (auto d : t.dims)
    if (d < 0) return {};
  return t.dims;
}

// The consumers of `v`, as a sorted list with one entry per use.
std::vector<NodeId> Uses(const Builder& b, ValueId v) {
  auto uses = b.graph.value(v).consumers;
  std::sort(uses.begin(), uses.end());
  return uses;
}

bool FoldBatchNorm(Builder& b, Chain& chain, const Node& bn) {
  const std::string& anchor = b.graph.node(chain.anchor).op_type;
  if ((anchor != "Conv" && anchor != "ConvTranspose" && anchor != "Gemm") || !chain.post_ops.empty()) return false;
  if (AttrInt(bn, "training_mode", 0) != 0 || bn.outputs.size() > 1) return false;
  for (std::size_t i = 1; i < 5; ++i)
    if (i >= bn.inputs.size() || !b.IsConst(bn.inputs[i])) return false;
  const Tensor &s = b.Const(bn.inputs[1], bn), &t = b.Const(bn.inputs[2], bn);
  const Tensor &mean = b.Const(bn.inputs[3], bn), &var = b.Const(bn.inputs[4], bn);
  std::size_t channels = s.data.size();
  if (t.data.size() != channels || mean.data.size() != channels || var.data.size() != channels) return false;
  if (!chain.scale.empty() && chain.scale.size() != channels) return false;
  double eps = AttrFloat(bn, "epsilon", 1e-5f);
  if (chain.scale.empty()) chain.scale.assign(channels, 1.0), chain.shift.assign(channels, 0.0);
  for (std::size_t c = 0; c < channels; ++c) {
    double k = static_cast<double>(s.data[c]) / std::sqrt(static_cast<double>(var.data[c]) + eps);
    chain.scale[c] *= k;
    chain.shift[c] = (chain.shift[c] - mean.data[c]) * k + t.data[c];
  }
  return true;
}

// Sigmoid(x) * x -> swish; HardSigmoid(x) * x -> hardswish (when alpha = 1/6, beta = 1/2).
NodeId GatedMul(Builder& b, const Chain& chain, const Node& gate, const std::vector<NodeId>& group) {
  auto uses = Uses(b, chain.out);
  if (uses.size() != 2 || gate.outputs.size() != 1) return kNoNode;
  auto gate_uses = b.graph.value(gate.outputs[0]).consumers;
  if (gate_uses.size() != 1) return kNoNode;
  NodeId mul = gate_uses[0];
  const Node& m = b.graph.node(mul);
  if (m.op_type != "Mul" || std::find(group.begin(), group.end(), mul) == group.end()) return kNoNode;
  bool pair = (m.inputs[0] == chain.out && m.inputs[1] == gate.outputs[0]) ||
              (m.inputs[1] == chain.out && m.inputs[0] == gate.outputs[0]);
  return pair && std::find(uses.begin(), uses.end(), mul) != uses.end() ? mul : kNoNode;
}

bool AttachBinary(Builder& b, Chain& chain, const Node& node) {
  int main = node.inputs[0] == chain.out ? 0 : 1;
  ValueId other = node.inputs[static_cast<std::size_t>(1 - main)];
  if (other == chain.out || node.inputs[static_cast<std::size_t>(main)] != chain.out) return false;
  Dims out = KnownDims(b, chain.out), result = KnownDims(b, node.outputs[0]);
  if (out.empty() || out != result) return false;  // the main path must not broadcast
  const std::string& op = node.op_type;
  PostOp po;
  if (b.IsConst(other)) {
    const Tensor& c = b.Const(other, node);
    if (c.elem_type != onnx::TensorProto::FLOAT) return false;
    if (c.NumElements() == 1) {  // scalar: one linear eltwise
      float k = c.data[0];
      po.alg = dnnl::algorithm::eltwise_linear;
      if (op == "Add") po.alpha = 1, po.beta = k;
      else if (op == "Mul") po.alpha = k, po.beta = 0;
      else if (op == "Sub") po.alpha = main == 0 ? 1.f : -1.f, po.beta = main == 0 ? -k : k;
      else if (op == "Div" && main == 0 && k != 0) po.alpha = 1 / k, po.beta = 0;
      else return false;
      chain.post_ops.push_back(po);
      return true;
    }
    if (main == 1 && (op == "Sub" || op == "Div")) return false;
    po.kind = Kind::kBinary;
    po.constant = c;
    po.constant->dims = ExpandRank(c.dims, out.size());
  } else {
    if (!b.IsAct(other) || (main == 1 && (op == "Sub" || op == "Div"))) return false;
    bool has_sum = std::any_of(chain.post_ops.begin(), chain.post_ops.end(),
                               [](const PostOp& p) { return p.kind == Kind::kSum; });
    // `sum` accumulates into the destination of a (de)convolution, inner product or matmul.
    const std::string& anchor = b.graph.node(chain.anchor).op_type;
    bool sum_anchor = anchor == "Conv" || anchor == "ConvTranspose" || anchor == "Gemm" || anchor == "MatMul";
    po.kind = op == "Add" && sum_anchor && !has_sum && b.ActOf(other, node).dims == out ? Kind::kSum : Kind::kBinary;
    po.operand = other;
  }
  po.alg = op == "Add" ? dnnl::algorithm::binary_add
           : op == "Sub" ? dnnl::algorithm::binary_sub
           : op == "Mul" ? dnnl::algorithm::binary_mul
                         : dnnl::algorithm::binary_div;
  chain.post_ops.push_back(std::move(po));
  return true;
}

// Absorbs `id` into the chain when it only extends the chain's output.
bool TryAttach(Builder& b, Chain& chain, NodeId id, const std::vector<NodeId>& group) {
  const Node& node = b.graph.node(id);
  const Node& anchor = b.graph.node(chain.anchor);
  if (!node.domain.empty() || b.graph.value(chain.out).is_graph_output || chain.post_ops.size() + 2 > kMaxPostOps)
    return false;
  if (node.outputs.empty() || node.inputs.empty()) return false;
  auto uses = Uses(b, chain.out);
  bool sole_use = uses.size() == 1 && uses[0] == id;
  bool extend = false;
  if (anchor.op_type == "BatchNormalization") {
    // The batch normalization primitive takes a fused Relu and nothing else.
    extend = node.op_type == "Relu" && sole_use && !chain.norm_relu;
    if (extend) chain.norm_relu = true;
  } else if (node.op_type == "BatchNormalization") {
    extend = sole_use && node.inputs[0] == chain.out && FoldBatchNorm(b, chain, node);
  } else if (IsBinaryOp(node.op_type)) {
    extend = sole_use && AttachBinary(b, chain, node);
  } else if (node.inputs[0] == chain.out) {
    if (node.op_type == "Sigmoid" || node.op_type == "HardSigmoid") {
      NodeId mul = GatedMul(b, chain, node, group);
      float alpha = AttrFloat(node, "alpha", 0.2f), beta = AttrFloat(node, "beta", 0.5f);
      bool hard_swish = node.op_type == "HardSigmoid" && std::fabs(alpha - 1.f / 6) < 1e-6f && beta == 0.5f;
      if (mul != kNoNode && (node.op_type == "Sigmoid" || hard_swish)) {
        PostOp po;
        po.alg = hard_swish ? dnnl::algorithm::eltwise_hardswish : dnnl::algorithm::eltwise_swish;
        po.alpha = hard_swish ? 1.f / 6 : 1.f;
        po.beta = hard_swish ? 0.5f : 0.f;
        chain.post_ops.push_back(po);
        const Node& m = b.graph.node(mul);
        b.Consume(node), b.Consume(m);
        chain.members.push_back(id), chain.members.push_back(mul);
        b.absorbed[mul] = true;
        chain.out = m.outputs[0];
        return true;
      }
    }
    if (node.op_type == "Div" && !sole_use) {
      if (auto gelu = MatchGelu(b, chain.out, true)) {  // consumes the pattern's nodes
        chain.post_ops.push_back(PostOp{Kind::kEltwise, dnnl::algorithm::eltwise_gelu_erf, 0, 0, kNoValue, {}});
        chain.members.push_back(id);
        chain.out = *gelu;
        return true;
      }
    }
    if (sole_use) {
      auto ops = EltwiseOf(b, node);
      extend = !ops.empty();
      for (auto& po : ops) chain.post_ops.push_back(po);
    }
  }
  if (!extend) return false;
  b.Consume(node);
  chain.members.push_back(id);
  chain.out = node.outputs[0];
  return true;
}

// TryAttach, recording which member each new post-op comes from.
bool Attach(Builder& b, Chain& chain, NodeId id, const std::vector<NodeId>& group) {
  const std::size_t first_op = chain.post_ops.size(), member = chain.members.size();
  if (!TryAttach(b, chain, id, group)) return false;
  for (std::size_t i = first_op; i < chain.post_ops.size(); ++i) chain.post_ops[i].member = member;
  return true;
}

// True when the chain may be cut before post-op `k`: not inside one node's post-ops.
bool CutAt(const Chain& chain, std::size_t k) {
  return k == 0 || k >= chain.post_ops.size() || chain.post_ops[k].member != chain.post_ops[k - 1].member;
}

// "Add_3+Relu": the names of members [first, end) joined as ChainLabel does.
std::string MembersLabel(const Builder& b, const Chain& chain, std::size_t first, std::size_t end) {
  end = std::min(std::max(end, first + 1), chain.members.size());
  std::string label = b.graph.node(chain.members[first]).name;
  for (std::size_t i = first + 1; i < end; ++i) label += "+" + b.graph.node(chain.members[i]).op_type;
  return label;
}

// The first member executed by post-op `k` (members.size() past the last one).
std::size_t MemberOf(const Chain& chain, std::size_t k) {
  return k < chain.post_ops.size() ? chain.post_ops[k].member : chain.members.size();
}

// Post-ops [begin, end) of `chain` for a primitive whose destination has
// `dst_dims`. With `args`, the binary operands' arguments are appended (which
// may emit reorders); without, only their descriptors are computed (a probe).
dnnl::post_ops BuildPostOps(Builder& b, const Chain& chain, std::size_t begin, std::size_t end, const Dims& dst_dims,
                            std::vector<std::pair<int, Arg>>* args) {
  dnnl::post_ops ops;
  const Node& anchor = b.graph.node(chain.anchor);
  for (std::size_t i = begin; i < end; ++i) {
    const PostOp& po = chain.post_ops[i];
    if (po.kind == Kind::kEltwise) {
      ops.append_eltwise(1.f, po.alg, po.alpha, po.beta);
    } else if (po.kind == Kind::kSum) {
      ops.append_sum(1.f);
    } else {
      Arg arg;
      if (po.constant) {
        arg.md = PlainDesc(po.constant->dims);
        if (args) arg.fixed = b.HostMemory(arg.md, po.constant->data.data());
      } else {
        const Act& a = b.ActOf(po.operand, anchor);
        if (a.dims == dst_dims) {
          arg = args ? b.UseAsIs(po.operand, anchor) : Arg{a.slot, a.md, {}};
        } else {  // broadcast operand: a plain view with the destination's rank
          if (args) arg = b.UsePlain(po.operand, anchor);
          arg.md = PlainDesc(ExpandRank(a.dims, dst_dims.size()));
        }
      }
      ops.append_binary(po.alg, arg.md);
      if (args) args->emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i - begin)) | DNNL_ARG_SRC_1, arg);
    }
  }
  return ops;
}

// The longest cut in [lo, hi] (lo always allowed) whose primitive `probe`
// reports fast, else the longest whose primitive can be created; nullopt when
// none can. `probe(k)`: the implementation with post-ops up to k, or nullopt.
std::optional<std::size_t> LongestFast(const Chain& chain, std::size_t lo, std::size_t hi, const std::string& kind,
                                       const std::function<std::optional<std::string>(std::size_t)>& probe) {
  std::optional<std::size_t> creatable;
  for (std::size_t k = hi + 1; k-- > lo;) {
    if (k != lo && !CutAt(chain, k)) continue;
    auto impl = probe(k);
    if (!impl) continue;
    if (!IsSlowImpl(kind, *impl)) return k;
    if (!creatable) creatable = k;
  }
  return creatable;
}

// The descriptor of binary operand (src1) of a tail primitive running post-op
// `po` on a destination `cur` with dims `dims`.
dnnl::memory::desc TailOperandDesc(const Builder& b, const Chain& chain, const PostOp& po,
                                   const dnnl::memory::desc& cur, const Dims& dims) {
  if (po.constant) return PlainDesc(po.constant->dims);
  const Act& a = b.ActOf(po.operand, b.graph.node(chain.members[po.member]));
  return a.dims == dims ? cur : PlainDesc(ExpandRank(a.dims, dims.size()));
}

// One primitive of a split chain's tail: post-op `first` applied in place to the
// anchor's destination, with post-ops (first, end) as its own post-ops.
struct TailStep {
  std::size_t first = 0, end = 0;
  dnnl::primitive_desc_base pd;
  std::vector<std::pair<int, Arg>> args;
};

// The tail primitive's descriptor; empty when oneDNN has none (`error` says why).
dnnl::primitive_desc_base TailPd(Builder& b, const Chain& chain, std::size_t first, std::size_t end,
                                 const dnnl::memory::desc& cur, const Dims& dims, std::string& error) {
  const PostOp& po = chain.post_ops[first];
  dnnl::primitive_attr attr = b.Attr(BuildPostOps(b, chain, first + 1, end, dims, nullptr));
  try {
    if (po.kind == Kind::kEltwise)
      return dnnl::eltwise_forward::primitive_desc(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, po.alg, cur, po.alpha, po.beta), attr,
          b.engine);
    return dnnl::binary::primitive_desc(
        dnnl::binary::desc(po.alg, cur, TailOperandDesc(b, chain, po, cur, dims), cur), attr, b.engine);
  } catch (const dnnl::error& e) {
    error = e.what();
    return {};
  }
}

// Plans the tail of `chain`: its post-ops after the first `count`, applied to
// the anchor's destination `cur` (dims `dims`). False when a step cannot be
// created (`error` says why); `fast` tells whether every step is fast.
bool PlanTail(Builder& b, const Chain& chain, std::size_t count, const dnnl::memory::desc& cur, const Dims& dims,
              std::vector<TailStep>& tail, bool& fast, std::string& error) {
  const std::size_t n = chain.post_ops.size();
  tail.clear();
  fast = true;
  for (std::size_t first = count; first < n;) {
    const std::string kind = chain.post_ops[first].kind == Kind::kEltwise ? "eltwise" : "binary";
    std::size_t hi = first + 1;  // a sum needs the addend in its destination: it starts a step of its own
    while (hi < n && chain.post_ops[hi].kind != Kind::kSum) ++hi;
    std::map<std::size_t, dnnl::primitive_desc_base> made;
    auto end = LongestFast(chain, first + 1, hi, kind, [&](std::size_t k) -> std::optional<std::string> {
      dnnl::primitive_desc_base pd = TailPd(b, chain, first, k, cur, dims, error);
      if (!pd) return std::nullopt;
      made[k] = pd;
      return std::string(pd.impl_info_str());
    });
    if (!end) return false;
    tail.push_back(TailStep{first, *end, made.at(*end), {}});
    fast &= !IsSlowImpl(kind, tail.back().pd.impl_info_str());
    first = *end;
  }
  return true;
}

// The anchor's destination as its tail sees it: a collapsed matmul's [B*M, N] is plain [B.., M, N].
dnnl::memory::desc TailDesc(const dnnl::memory::desc& dst, const Dims& dims) {
  return static_cast<std::size_t>(dst.data.ndims) != dims.size() ? PlainDesc(dims) : dst;
}

// Channels-last (NWC, NHWC, NDHWC) f32 for 3-D to 5-D dims; a zero desc otherwise.
dnnl::memory::desc ChannelsLastDesc(const Dims& dims) {
  using tag = dnnl::memory::format_tag;
  if (dims.size() < 3 || dims.size() > 5) return {};
  tag t = dims.size() == 3 ? tag::nwc : dims.size() == 4 ? tag::nhwc : tag::ndhwc;
  return dnnl::memory::desc(dims, DataType::f32, t);
}

void Flush(Builder& b, const Chain& chain) {
  const std::string& op = b.graph.node(chain.anchor).op_type;
  if (op == "Conv") EmitConv(b, chain);
  else if (op == "ConvTranspose") EmitDeconv(b, chain);
  else if (op == "Gemm") EmitGemm(b, chain);
  else if (op == "MatMul") EmitMatMul(b, chain);
  else if (op == "BatchNormalization") EmitBatchNorm(b, chain);
  else EmitBinary(b, chain);
}

}  // namespace

std::string ChainLabel(const Builder& b, const Chain& chain) {
  return MembersLabel(b, chain, 0, chain.members.size());
}

void LowerGroup(Builder& b, const std::vector<NodeId>& nodes) {
  std::optional<Chain> chain;
  for (NodeId id : nodes) {
    if (b.absorbed[id]) continue;
    const Node& node = b.graph.node(id);
    if (TryFold(b, id)) {
      b.Consume(node);
      continue;
    }
    if (chain && b.fuse && Attach(b, *chain, id, nodes)) continue;
    if (chain) Flush(b, *chain), chain.reset();
    if (b.fuse && node.op_type == "ReduceMean" && TryLayerNorm(b, id)) continue;
    if (b.fuse && node.op_type == "Div" && b.IsAct(node.inputs[0]) && MatchGelu(b, node.inputs[0], false)) {
      EmitGelu(b, id);
      continue;
    }
    if (StartsChain(b, node)) {
      chain = Chain{id, node.outputs.at(0), {id}, {}, {}, {}, false};
    } else if (!LowerView(b, id) && !LowerSlice(b, id)) {
      const std::string& op = node.op_type;
      if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
        EmitPool(b, id);
      else if (op == "Softmax") EmitSoftmax(b, id);
      else if (op == "Concat") EmitConcat(b, id);
      else if (op == "PRelu") EmitPrelu(b, id);
      else if (op == "Resize") EmitResize(b, id);
      else if (op == "LayerNormalization") EmitLayerNormalization(b, id);
      else if (op == "InstanceNormalization") EmitInstanceNormalization(b, id);
      else if (op.rfind("Reduce", 0) == 0) EmitReduce(b, id);
      else if (op == "Erf") EmitErf(b, id);
      else if (!EltwiseOf(b, node).empty()) EmitEltwise(b, id);
      else
        throw Error(ErrorKind::kUnsupported, b.graph.source_path() + ": " + NodeLabel(node) +
                                                 ": operator not supported by the oneDNN backend");
    }
    b.Consume(node);
  }
  if (chain) Flush(b, *chain);
  b.ReleaseConsts(nodes);
}

dnnl::post_ops MakePostOps(Builder& b, const Chain& chain, const Dims& dst_dims, std::vector<std::pair<int, Arg>>& args,
                           std::size_t count) {
  return BuildPostOps(b, chain, 0, std::min(count, chain.post_ops.size()), dst_dims, &args);
}

AnchorChoice ChooseAnchor(Builder& b, const Chain& chain, const Dims& dst_dims, const Chain& pd_chain,
                          const Dims& pd_dims, const std::string& kind, const AnchorProbeFn& probe) {
  const std::size_t n = chain.post_ops.size();
  const dnnl::memory::desc channels_last = b.fuse ? ChannelsLastDesc(pd_dims) : dnnl::memory::desc();
  std::optional<AnchorChoice> fallback;
  std::optional<std::string> whole;
  std::vector<TailStep> tail;
  std::string error;
  for (std::size_t k = n + 1; k-- > 0;) {
    if (!CutAt(chain, k)) continue;
    const dnnl::primitive_attr attr = b.Attr(BuildPostOps(b, pd_chain, 0, k, pd_dims, nullptr));
    for (bool cl : {false, true}) {
      if (cl && channels_last.is_zero()) continue;
      auto r = probe(k, cl ? channels_last : dnnl::memory::desc(), attr);
      if (!r) continue;
      if (k == n && !cl) whole = r->impl;
      bool tail_fast = true;
      if (!PlanTail(b, chain, k, TailDesc(r->dst, dst_dims), dst_dims, tail, tail_fast, error)) continue;
      AnchorChoice choice{k, cl};
      if (!IsSlowImpl(kind, r->impl) && tail_fast) {
        if (k < n || cl)
          spdlog::debug("{} [{}]: {} with all {} post-ops; {}{}", kind, ChainLabel(b, chain),
                        whole ? "'" + *whole + "'" : std::string("no implementation"), n,
                        cl ? "a channels-last destination, " : "",
                        k < n ? std::to_string(k) + " of them on the " + kind + " and the rest as separate primitives"
                              : std::string("all of them on the ") + kind);
        return choice;
      }
      if (!fallback) fallback = choice;  // nothing fast: the longest that can be created (the whole chain)
    }
  }
  return fallback.value_or(AnchorChoice{n, false});  // nothing at all: the caller reports it
}

void FinishChain(Builder& b, const Chain& chain, const dnnl::primitive_desc_base& pd, const std::string& kind,
                 const Dims& dst_dims, std::vector<std::pair<int, Arg>> args, const std::vector<int>& src_slots,
                 std::size_t count) {
  const Node& anchor = b.graph.node(chain.anchor);
  count = std::min(count, chain.post_ops.size());
  dnnl::memory::desc dst_md = pd.dst_desc(0);
  const dnnl::memory::desc cur_md = TailDesc(dst_md, dst_dims);

  // The tail: post-ops the anchor's primitive does not take, as primitives of
  // their own, each taking as many following non-sum post-ops as stays fast
  // (as ChooseAnchor planned it).
  std::vector<TailStep> tail;
  bool fast = true;
  std::string error;
  if (!PlanTail(b, chain, count, cur_md, dst_dims, tail, fast, error))
    Unsupported(b, b.graph.node(chain.members[chain.post_ops[count].member]), "oneDNN has no implementation: " + error);
  // Their operands, before the anchor writes anything: a sum addend's buffer
  // is written in place only when no step of the chain reads it.
  std::vector<int> read = src_slots;
  for (const auto& [key, arg] : args) read.push_back(arg.slot);
  for (TailStep& t : tail) {
    const PostOp& po = chain.post_ops[t.first];
    const Node& user = b.graph.node(chain.members[po.member]);
    if (po.kind != Kind::kEltwise) {
      Arg src1;
      src1.md = TailOperandDesc(b, chain, po, cur_md, dst_dims);
      if (po.constant) src1.fixed = b.HostMemory(src1.md, po.constant->data.data());
      else if (b.ActOf(po.operand, user).dims == dst_dims) src1 = b.Use(po.operand, cur_md, user);
      else src1.slot = b.UsePlain(po.operand, user).slot;
      t.args.emplace_back(DNNL_ARG_SRC_1, src1);
    }
    BuildPostOps(b, chain, t.first + 1, t.end, dst_dims, &t.args);
    for (const auto& [key, arg] : t.args) read.push_back(arg.slot);
  }

  std::string label = MembersLabel(b, chain, 0, MemberOf(chain, count));
  Act dst;
  auto sum = std::find_if(chain.post_ops.begin(), chain.post_ops.begin() + static_cast<std::ptrdiff_t>(count),
                          [](const PostOp& p) { return p.kind == Kind::kSum; });
  if (sum != chain.post_ops.begin() + static_cast<std::ptrdiff_t>(count)) {
    // The sum post-op adds into the destination: it must hold the addend first.
    Arg addend = b.Use(sum->operand, dst_md, anchor);
    bool read_here = std::find(read.begin(), read.end(), addend.slot) != read.end();
    if (b.DeadNow(addend.slot) && !read_here) dst = Act{addend.slot, dst_md, dst_dims};
    else dst = b.EmitReorder(addend, dst_dims, dst_md, label + " (copy of the sum addend)");
  } else {
    dst = b.NewAct(dst_dims, dst_md);
  }
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, dst_md, {}});
  b.Emit(pd, kind, label, std::move(args), dst_md);
  dst.md = cur_md;

  for (TailStep& t : tail) {  // in place: nothing else reads the chain's intermediate values
    const bool eltwise = chain.post_ops[t.first].kind == Kind::kEltwise;
    Arg cur{dst.slot, cur_md, {}};
    t.args.emplace_back(eltwise ? DNNL_ARG_SRC : DNNL_ARG_SRC_0, cur);
    t.args.emplace_back(DNNL_ARG_DST, cur);
    b.Emit(t.pd, eltwise ? "eltwise" : "binary",
           MembersLabel(b, chain, MemberOf(chain, t.first), MemberOf(chain, t.end)), std::move(t.args), cur_md);
  }
  b.SetAct(chain.out, dst);
}

}  // namespace onnxfuse::backend
