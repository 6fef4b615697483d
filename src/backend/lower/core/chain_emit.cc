// Emitting a chain (chain.h, "Splitting"): how many post-ops its anchor takes
// (ChooseAnchor), then the anchor's step and the in-place steps of the rest
// (FinishChain). Chains are built in backend/lower/core/chain.cc.
#include "backend/lower/core/chain.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include <spdlog/spdlog.h>

#include "backend/kernels/broadcast_binary.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/core/unsupported.h"
#include "backend/lower/core/onednn_limits.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

using Kind = PostOp::Kind;

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


// The longest cut in [lo, hi] (lo always allowed; the step runs post-op lo - 1
// and takes those up to the cut as its own, as far as PostOpsRight allows on
// `dims`) whose primitive `probe` reports fast, else the longest whose
// primitive can be created; nullopt when none can. `probe(k)`: the implementation with post-ops up to k, or nullopt.
std::optional<std::size_t> LongestFast(const Chain& chain, std::size_t lo, std::size_t hi, const std::string& kind,
                                       const Dims& dims,
                                       const std::function<std::optional<std::string>(std::size_t)>& probe) {
  std::optional<std::size_t> creatable;
  for (std::size_t k = hi + 1; k-- > lo;) {
    if (k != lo && (!CutAt(chain, k) || !PostOpsRight(chain, lo - 1, k, kind, dims))) continue;
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
  /// Set for a lone binary post-op that runs on our BroadcastBinary (OwnTailBinary): its alg and operand.
  std::optional<BinaryAlg> own;
  KernelOperand<float> operand;
  /// oneDNN serves this lone binary step only with its reference kernel (PlanTail).
  bool reference = false;
};

// True when `cur` (dims `dims`) is channels-last and not also plain.
bool OnlyChannelsLast(const dnnl::memory::desc& cur, const Dims& dims) {
  return dims.size() >= 3 && dims.size() <= 5 && !IsPlainEquivalent(cur) && SameBytes(cur, ChannelsLastDesc(dims));
}

// True when BroadcastBinary can run a tail step in place on the chain's
// destination `cur` (dims `dims`): float32 of fixed dims, plain or
// channels-last (read in its physical order, OwnTailOperand).
bool OwnKernelTakes(const dnnl::memory::desc& cur, const Dims& dims) {
  return cur.data_type() == dnnl::memory::data_type::f32 && !HasRunTimeDims(cur) &&
         (IsPlainEquivalent(cur) || OnlyChannelsLast(cur, dims));
}

// Dims [N, C, D.., ] in channels-last order: [N, D.., C].
Dims ChannelsLastOrder(const Dims& dims) {
  Dims order = {dims[0]};
  order.insert(order.end(), dims.begin() + 2, dims.end());
  order.push_back(dims[1]);
  return order;
}

// The BroadcastBinary algorithm of an Add, Sub, Mul or Div post-op.
std::optional<BinaryAlg> OwnAlgOf(dnnl::algorithm alg) {
  switch (alg) {
    case dnnl::algorithm::binary_add: return BinaryAlg::kAdd;
    case dnnl::algorithm::binary_sub: return BinaryAlg::kSub;
    case dnnl::algorithm::binary_mul: return BinaryAlg::kMul;
    case dnnl::algorithm::binary_div: return BinaryAlg::kDiv;
    default: return std::nullopt;
  }
}

// The algorithm of a tail step that runs on our BroadcastBinary, in place on
// the chain's plain float32 destination: a binary (or sum: an Add) post-op
// that takes no post-ops of its own, where oneDNN's binary would run its
// reference kernel (TailStep::reference), or where the destination's dims
// change from one compiled shape to the next (Builder::VaryingDimsOf):
// oneDNN's binary is a JIT kernel generated for one shape; ours takes the
// extents as data (broadcast_binary.h). nullopt for any other step.
std::optional<BinaryAlg> OwnTailBinary(const Builder& b, const Chain& chain, const TailStep& t,
                                       const dnnl::memory::desc& cur) {
  const PostOp& po = chain.post_ops[t.first];
  if (po.kind == Kind::kEltwise || t.end != t.first + 1 || !OwnKernelTakes(cur, DimsOf(cur)) ||
      !(t.reference || b.DimsVary(b.graph.node(chain.anchor).outputs.at(0))))
    return std::nullopt;
  return OwnAlgOf(po.alg);
}

// The operand of a tail step on BroadcastBinary (OwnTailBinary) on the
// destination `cur` (dims `dims`): as FloatKernelOperand reads it when `cur`
// is plain; when it is channels-last, in the same physical order, so that
// the kernel broadcasts over [N, D.., C] (a constant permuted here, an
// activation reordered to channels-last first).
KernelOperand<float> OwnTailOperand(Builder& b, const PostOp& po, const Node& user, const dnnl::memory::desc& cur,
                                    const Dims& dims, std::vector<std::pair<int, Arg>>& args) {
  if (!OnlyChannelsLast(cur, dims)) {
    if (po.constant) return {std::make_shared<const std::vector<float>>(po.constant->data), -1, po.constant->dims};
    return FloatKernelOperand(b, po.operand, user, args);
  }
  if (po.constant) {  // dims of the output's rank (PostOp::constant)
    const Dims& d = po.constant->dims;
    const Dims order = ChannelsLastOrder(d);
    std::vector<float> permuted(po.constant->data.size());
    const std::int64_t n = d[0], c = d[1], pixels = Product(d) / std::max<std::int64_t>(1, n * c);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t ch = 0; ch < c; ++ch)
        for (std::int64_t p = 0; p < pixels; ++p)
          permuted[static_cast<std::size_t>((i * pixels + p) * c + ch)] =
              po.constant->data[static_cast<std::size_t>((i * c + ch) * pixels + p)];
    b.weight_bytes += static_cast<std::int64_t>(permuted.size() * sizeof(float));
    return {std::make_shared<const std::vector<float>>(std::move(permuted)), -1, order};
  }
  const Dims d = ExpandRank(b.ActOf(po.operand, user).dims, dims.size());
  Arg plain = b.UsePlain(po.operand, user);
  plain.md = PlainDesc(d);  // the leading 1s are the descriptor's alone
  const Act cl = b.EmitReorder(plain, d, ChannelsLastDesc(d), user.name + " (operand, channels-last)");
  KernelOperand<float> operand;
  operand.arg = static_cast<int>(args.size()), operand.dims = ChannelsLastOrder(d);
  args.emplace_back(operand.arg, Arg{cl.slot, cl.md, {}});
  return operand;
}

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
    // Tail steps run in place; a binary's post-ops must be right there (limit 2).
    if (kind == "binary" && !(BinaryPostOpsInPlaceRight(cur) && BinaryPostOpsRight(cur))) hi = first + 1;
    // Dims that vary: each binary on its own, to run on our kernel (OwnTailBinary).
    if (kind == "binary" && b.DimsVary(b.graph.node(chain.anchor).outputs.at(0))) hi = first + 1;
    std::map<std::size_t, dnnl::primitive_desc_base> made;
    auto end = LongestFast(chain, first + 1, hi, kind, dims, [&](std::size_t k) -> std::optional<std::string> {
      dnnl::primitive_desc_base pd = TailPd(b, chain, first, k, cur, dims, error);
      if (!pd) return std::nullopt;
      made[k] = pd;
      return std::string(pd.impl_info_str());
    });
    if (!end) return false;
    const PostOp& po = chain.post_ops[first];
    if (kind == "binary" && IsSlowImpl(kind, made.at(*end).impl_info_str()) && po.kind == Kind::kBinary &&
        OwnKernelTakes(cur, dims) && OwnAlgOf(po.alg)) {
      // oneDNN has only its reference kernel for this binary: the binary alone
      // runs on our BroadcastBinary (OwnTailBinary), its post-ops as steps of their own.
      tail.push_back(TailStep{first, first + 1, made.at(*end), {}, std::nullopt, {}, true});
      first = first + 1;
      continue;
    }
    tail.push_back(TailStep{first, *end, made.at(*end), {}, std::nullopt, {}, false});
    fast &= !IsSlowImpl(kind, tail.back().pd.impl_info_str());
    first = *end;
  }
  return true;
}

// The anchor's destination as its tail sees it: a collapsed matmul's [B*M, N] is plain [B.., M, N].
dnnl::memory::desc TailDesc(const dnnl::memory::desc& dst, const Dims& dims) {
  return static_cast<std::size_t>(dst.data.ndims) != dims.size() ? PlainDesc(dims) : dst;
}

}  // namespace

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
        if (a.dims == dst_dims && IsDense(a.md)) {
          arg = args ? b.UseAsIs(po.operand, anchor) : Arg{a.slot, a.md, {}};
        } else {  // broadcast operand or sub-tensor view: plain, with the destination's rank
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

std::size_t RightPrefix(const Chain& chain, const std::string& kind, const Dims& dst_dims) {
  std::size_t k = chain.post_ops.size();
  while (k > 0 && !(CutAt(chain, k) && PostOpsRight(chain, 0, k, kind, dst_dims))) --k;
  return k;
}

std::string ChainLabel(const Builder& b, const Chain& chain) {
  return MembersLabel(b, chain, 0, chain.members.size());
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
    if (!CutAt(chain, k) || !PostOpsRight(pd_chain, 0, k, kind, pd_dims)) continue;
    const dnnl::primitive_attr attr = b.Attr(BuildPostOps(b, pd_chain, 0, k, pd_dims, nullptr));
    for (bool cl : {false, true}) {
      if (cl && channels_last.is_zero()) continue;
      auto r = probe(k, cl ? channels_last : dnnl::memory::desc(), attr);
      if (!r || (kind == "binary" && k > 0 && !BinaryPostOpsRight(r->dst))) continue;  // limit 2
      if (k == n && !cl) whole = r->impl;
      bool tail_fast = true;
      if (!PlanTail(b, chain, k, TailDesc(r->dst, dst_dims), dst_dims, tail, tail_fast, error)) continue;
      AnchorChoice choice{k, cl, false};
      if (!r->slow && tail_fast) {
        choice.fast = true;
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

// The slot of argument `key` of an elementwise primitive when its destination
// (`dst_md`) may overwrite it: the same layout, no other argument of the
// primitive or of its tail reads that buffer, and nothing reads it later
// (the chain's nodes are consumed by now). Else nullopt.
std::optional<int> OverwritableSource(const Builder& b, const std::vector<std::pair<int, Arg>>& args,
                                      const std::vector<TailStep>& tail, int key, const dnnl::memory::desc& dst_md) {
  if (key == kNoArg || !b.fuse) return std::nullopt;
  auto it = std::find_if(args.begin(), args.end(), [&](const auto& a) { return a.first == key; });
  if (it == args.end() || it->second.slot < 0 || !(it->second.md == dst_md) || !b.DeadNow(it->second.slot))
    return std::nullopt;
  auto shares = [&](const std::pair<int, Arg>& a) { return a.first != key && b.SameBuffer(a.second.slot, it->second.slot); };
  if (std::any_of(args.begin(), args.end(), shares)) return std::nullopt;
  for (const TailStep& t : tail)
    if (std::any_of(t.args.begin(), t.args.end(), shares)) return std::nullopt;
  return it->second.slot;
}

void FinishChain(Builder& b, const Chain& chain, const dnnl::primitive_desc_base& pd, const std::string& kind,
                 const Dims& dst_dims, std::vector<std::pair<int, Arg>> args, const std::vector<int>& src_slots,
                 std::size_t count, int in_place_arg) {
  const Node& anchor = b.graph.node(chain.anchor);
  count = std::min(count, chain.post_ops.size());
  // A primitive made for any shape (run-time dims) writes a plain tensor of dst_dims here.
  dnnl::memory::desc dst_md = HasRunTimeDims(pd.dst_desc(0)) ? PlainDesc(dst_dims) : pd.dst_desc(0);
  // A channel block holding all channels (nChw16c of 16) is channels-last:
  // recorded as such, readers that look for channels-last (concat, pooling)
  // take it as it is.
  const dnnl::memory::desc tail_md = TailDesc(dst_md, dst_dims), channels_last = ChannelsLastDesc(dst_dims);
  const dnnl::memory::desc cur_md = SameBytes(tail_md, channels_last) ? channels_last : tail_md;

  // The tail: post-ops the anchor's primitive does not take, as primitives of
  // their own, each taking as many following non-sum post-ops as stays fast
  // (as ChooseAnchor planned it).
  std::vector<TailStep> tail;
  bool fast = true;
  std::string error;
  if (!PlanTail(b, chain, count, cur_md, dst_dims, tail, fast, error))
    Unsupported(b, b.graph.node(chain.members[chain.post_ops[count].member]), "oneDNN has no implementation: " + error);
  // A blocked destination whose channels are padded (nCw16c of 1 channel)
  // takes an eltwise tail that is not 0 at 0 (linear with a shift: an Add of
  // a constant) only on oneDNN's reference kernel, which keeps the padding 0.
  // Then the tail runs channels-last, after one reorder, when it is fast there.
  dnnl::memory::desc steps_md = cur_md;
  if (!fast && cur_md.get_size() > channels_last.get_size()) {
    std::vector<TailStep> dense;
    bool dense_fast = false;
    std::string dense_error;
    if (PlanTail(b, chain, count, channels_last, dst_dims, dense, dense_fast, dense_error) && dense_fast)
      tail = std::move(dense), steps_md = channels_last;
  }
  // Their operands, before the anchor writes anything: a sum addend's buffer
  // is written in place only when no step of the chain reads it.
  std::vector<int> read = src_slots;
  for (const auto& [key, arg] : args) read.push_back(arg.slot);
  for (TailStep& t : tail) {
    const PostOp& po = chain.post_ops[t.first];
    const Node& user = b.graph.node(chain.members[po.member]);
    if ((t.own = OwnTailBinary(b, chain, t, steps_md))) {
      t.operand = OwnTailOperand(b, po, user, steps_md, dst_dims, t.args);
      for (const auto& [key, arg] : t.args) read.push_back(arg.slot);
      continue;
    }
    if (po.kind != Kind::kEltwise) {
      Arg src1;
      src1.md = TailOperandDesc(b, chain, po, steps_md, dst_dims);
      if (po.constant) src1.fixed = b.HostMemory(src1.md, po.constant->data.data());
      else if (b.ActOf(po.operand, user).dims == dst_dims) src1 = b.Use(po.operand, steps_md, user);
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
    bool read_here = std::any_of(read.begin(), read.end(), [&](int slot) { return b.SameBuffer(slot, addend.slot); });
    if (b.DeadNow(addend.slot) && !read_here) dst = Act{addend.slot, dst_md, dst_dims};
    else dst = b.EmitReorder(addend, dst_dims, dst_md, label + " (copy of the sum addend)");
  } else if (auto over = kind == "binary" && count > 0 && !BinaryPostOpsInPlaceRight(dst_md)
                             ? std::nullopt
                             : OverwritableSource(b, args, tail, in_place_arg, dst_md)) {
    dst = Act{*over, dst_md, dst_dims};
  } else {
    dst = b.NewAct(dst_dims, dst_md);
  }
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, dst_md, {}});
  b.Emit(pd, kind, label, std::move(args), dst_md);
  dst.md = cur_md;
  if (steps_md != cur_md) dst = b.EmitReorder(Arg{dst.slot, dst_md, {}}, dst_dims, steps_md, label + " (dense for its tail)");

  for (TailStep& t : tail) {  // in place: nothing else reads the chain's intermediate values
    const bool eltwise = chain.post_ops[t.first].kind == Kind::kEltwise;
    Arg cur{dst.slot, steps_md, {}};
    if (t.own) {
      const int at = static_cast<int>(t.args.size());
      t.args.emplace_back(at, cur);
      const Dims order = OnlyChannelsLast(steps_md, dst_dims) ? ChannelsLastOrder(dst_dims) : dst_dims;
      const BroadcastPlan<2> plan = PlanBroadcast<2>(order, {order, t.operand.dims});
      CustomKernel kernel = [alg = *t.own, operand = t.operand, plan, at](const std::vector<void*>& data) {
        float* x = static_cast<float*>(data[static_cast<std::size_t>(at)]);
        BroadcastBinary(alg, x, operand.Data(data), x, plan);
      };
      b.EmitCustom("binary", MembersLabel(b, chain, MemberOf(chain, t.first), MemberOf(chain, t.end)),
                   std::move(t.args), std::move(kernel), steps_md, "onnxfuse:broadcast_binary");
      continue;
    }
    t.args.emplace_back(eltwise ? DNNL_ARG_SRC : DNNL_ARG_SRC_0, cur);
    t.args.emplace_back(DNNL_ARG_DST, cur);
    b.Emit(t.pd, eltwise ? "eltwise" : "binary",
           MembersLabel(b, chain, MemberOf(chain, t.first), MemberOf(chain, t.end)), std::move(t.args), steps_md);
  }
  b.SetAct(chain.out, dst);
}

}  // namespace onnxfuse::backend
