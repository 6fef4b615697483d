// Lowering ONNX nodes to oneDNN primitives.
//
// A fusion group is lowered as a sequence of Chains. A chain starts at an
// anchor node (Conv, ConvTranspose, Gemm, MatMul, a binary op,
// BatchNormalization, ...) and, in fused mode, absorbs the following members
// of its group that read only the chain's current output: inference
// BatchNormalization right after a Conv, ConvTranspose or Gemm is folded into
// the weights (per output channel, in double); elementwise
// ops become eltwise post-ops (x*Sigmoid(x) -> swish, x*HardSigmoid(x) ->
// hardswish, HardSigmoid -> linear + clip, Clip -> clip); Add/Sub/Mul/Div with
// a constant or a broadcast activation become binary post-ops; an Add of a
// same-shape activation becomes the `sum` post-op, which accumulates into the
// destination: the addend's buffer becomes the destination when nothing reads
// it later (in place), else it is copied first. A member that cannot be
// absorbed ends the chain and starts the next one.
//
// Splitting: oneDNN may serve an anchor with some post-ops only by a slow
// implementation (IsSlowImpl: `ref:`, or a gemm (de)convolution; e.g. oneDNN
// 2.6 runs a conv with a [1,1,H,W] broadcast binary post-op on its gemm kernel,
// 20x slower than its jit conv plus a separate binary) or by none at all. The
// chain is then split (ChooseAnchor, MakeChainPd): the anchor takes the longest
// prefix of its post-ops, cut between nodes, for which it and the rest are
// fast, and the rest runs after it as separate primitives in place on its
// destination (FinishChain): a binary or sum post-op as binary_forward, taking
// the following non-sum post-ops as its own post-ops as far as that stays fast;
// an eltwise one as eltwise_forward (likewise). Each prefix is tried with the
// anchor's own layout and then with a channels-last destination (on AVX2 the
// conv picks nChw8c, where a spatially broadcast binary is `ref:`; on NHWC it
// is jit). The steps are labelled with the nodes they execute. When no split
// is all fast (even the bare anchor is slow, say), the chain stays whole and
// Builder::Emit warns. Anchors of binary.cc and batch_norm.cc are not split by speed: a
// batch norm takes its chain whole, a binary anchor the longest prefix its
// primitive computes right (RightPrefix) and the rest as tail steps.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/lower/core/builder.h"
#include "backend/lower/core/unsupported.h"
#include "eval/batch_norm_affine.h"

namespace onnxfuse::backend {

struct PostOp {
  enum class Kind { kEltwise, kSum, kBinary };
  Kind kind = Kind::kEltwise;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0, beta = 0;
  ValueId operand = kNoValue;      ///< sum / binary with an activation operand
  std::optional<Tensor> constant;  ///< binary with a constant operand (dims of the output's rank)
  /// Index in Chain::members of the node it comes from (one node may give
  /// several post-ops: HardSigmoid; several nodes one: swish, Gelu). A chain is
  /// split only where this changes.
  std::size_t member = 0;
};

struct Chain {
  NodeId anchor = kNoNode;
  ValueId out = kNoValue;             ///< the value the chain computes so far
  std::vector<NodeId> members;        ///< anchor first
  eval::ChannelAffine affine;         ///< folded BatchNormalization(s) (empty: none)
  std::vector<PostOp> post_ops;
  /// The QuantizeLinear that ends an int8 convolution's chain
  /// (backend/lower/fused/int8_conv.h): `out` is then its integer output, and
  /// the float value it quantizes is never stored. kNoNode: none.
  NodeId quantize = kNoNode;
};

/// Lowers node `id` of a group together with the other nodes of a larger
/// pattern it starts, absorbing them; false, with nothing done, when it does not.
using PatternStart = std::function<bool(Builder& b, NodeId id)>;

/// What the names of the library patterns found in a group tell LowerGroup
/// (backend/lower/fused/pattern_lowerings.h gives it by pattern name).
struct NamedPattern {
  /// Offered each member that starts no chain (may be empty).
  PatternStart start;
  /// The Gelu (erf) decompositions the patterns end in (Gelu, MatMulAddGelu):
  /// each its Div, Erf, Add, Mul, Mul, in that order.
  std::vector<std::vector<const Node*>> gelus;
};

/// Add, Sub, Mul or Div: the ops a chain takes as binary post-ops (or starts at).
bool IsBinaryOp(const std::string& op_type);

/// True when `node` anchors a chain: a Conv, ConvTranspose, Gemm,
/// BatchNormalization, a MatMul of matrices, an int8 Add, or a binary op with
/// an activation of the output's shape that oneDNN's binary runs fast.
bool StartsChain(Builder& b, const Node& node);

/// Absorbs group member `id` into `chain` when it only extends the chain's
/// output (see the top of this file; a Gelu only when `named` names it),
/// recording which member each new post-op comes from; false, with nothing
/// done, otherwise. `group`: the group's members.
bool Attach(Builder& b, Chain& chain, NodeId id, const std::vector<NodeId>& group, const NamedPattern* named);

/// Lowers one fusion group (members in topological order; lower_group.cc); `fuse` off: one chain per node.
/// In fused mode, each member that starts no chain is offered to
/// `named->start` before its op's own lowering, and a chain takes a Gelu of
/// `named->gelus` as a Gelu post-op when its Div reads the chain's output and
/// nothing but that Div and the Gelu's first Mul reads it. Decompositions are
/// not recognized here: the pattern library names them (`named` null: none).
void LowerGroup(Builder& b, const std::vector<NodeId>& nodes, const NamedPattern* named = nullptr);

/// "Conv+BatchNormalization+Relu": the chain's node names joined, for step labels.
std::string ChainLabel(const Builder& b, const Chain& chain);

constexpr std::size_t kAllPostOps = std::numeric_limits<std::size_t>::max();
/// No DNNL_ARG_* (they are all positive).
constexpr int kNoArg = 0;

/// The most post-ops a primitive of `kind` with destination `dst_dims` may
/// take from the start of `chain` (cut between members) and compute right
/// (PostOpsRight, onednn_limits.h: oneDNN 2.6.3 runs, for one, the second of
/// two eltwise post-ops of one algorithm with the first one's parameters).
/// For anchors that are not split by speed (binary); the rest becomes tail steps.
std::size_t RightPrefix(const Chain& chain, const std::string& kind, const Dims& dst_dims);

/// Merges each eltwise_linear post-op into an eltwise_linear right before it:
/// a2 (a1 x + b1) + b2 = (a2 a1) x + (a2 b1 + b2), one step instead of two
/// (and never two linear steps in one primitive, see RightPrefix). The
/// merged step keeps the first one's member: the chain is no longer cut
/// between them.
void MergeLinearSteps(std::vector<PostOp>& post_ops);

/// Post-ops [begin, end) of `chain` for a primitive whose destination has
/// `dst_dims`. With `args`, the binary operands' arguments are appended (which
/// may emit reorders); without, only their descriptors are computed (a probe).
dnnl::post_ops BuildPostOps(Builder& b, const Chain& chain, std::size_t begin, std::size_t end, const Dims& dst_dims,
                            std::vector<std::pair<int, Arg>>* args);

/// Builds the first `count` post-ops of `chain` for a primitive whose
/// destination has `dst_dims`; appends the binary operands' arguments to `args`.
dnnl::post_ops MakePostOps(Builder& b, const Chain& chain, const Dims& dst_dims,
                           std::vector<std::pair<int, Arg>>& args, std::size_t count = kAllPostOps);

/// Creates the anchor descriptor of a chain with attributes `attr` (its
/// post-ops) and destination `dst`: a zero desc lets the anchor choose the
/// layout, as it would unsplit; otherwise channels-last, which (de)convolutions
/// take and others refuse with an empty PD. May throw dnnl::error when oneDNN
/// has no implementation. No side effects on the Builder: it is called once
/// per candidate tried.
template <typename PD>
using MakeAnchorPd = std::function<PD(const dnnl::primitive_attr& attr, const dnnl::memory::desc& dst)>;

/// What a candidate anchor descriptor is: its implementation and destination.
struct AnchorProbe {
  std::string impl;
  dnnl::memory::desc dst;
  bool slow = false;  ///< IsSlowPrimitive
};
/// The first `count` post-ops on the anchor, with a channels-last destination or the anchor's own choice.
struct AnchorChoice {
  std::size_t count = 0;
  bool channels_last = false;
  bool fast = false;  ///< the anchor and every tail step are fast
};
using AnchorProbeFn = std::function<std::optional<AnchorProbe>(std::size_t count, const dnnl::memory::desc& dst,
                                                                const dnnl::primitive_attr& attr)>;

/// Chooses how to split `chain` (see "Splitting" above). Candidates, longest
/// prefix first, each with the anchor's own layout and then (fused, 3-D to 5-D)
/// a channels-last destination: `probe(count, dst, attr)` creates the anchor's
/// descriptor with the first `count` post-ops of `pd_chain` for a destination
/// of `pd_dims` (as the anchor's primitive sees them; for a collapsed matmul
/// not `chain` / `dst_dims`), nullopt when it cannot be created. The first
/// candidate whose anchor and tail primitives are all fast is taken; when
/// none is, the first that can be created (the whole chain, normally); when
/// nothing can, {all, false} (the caller reports the error).
AnchorChoice ChooseAnchor(Builder& b, const Chain& chain, const Dims& dst_dims, const Chain& pd_chain,
                          const Dims& pd_dims, const std::string& kind, const AnchorProbeFn& probe);

/// The anchor descriptor of `chain` (`kind` as in its step: "conv", "matmul",
/// ...) chosen by ChooseAnchor; sets `count` to the number of post-ops it takes,
/// to pass to MakePostOps and FinishChain, and `*all_fast` (when given) to
/// whether the anchor and its tail are all fast. `pd_chain` / `pd_dims`: as
/// ChooseAnchor. Throws Error(kUnsupported) naming the anchor when no candidate
/// can be created.
template <typename PD>
PD MakeChainPd(Builder& b, const Chain& chain, const Dims& dst_dims, const Chain& pd_chain, const Dims& pd_dims,
               const std::string& kind, std::size_t& count, const MakeAnchorPd<PD>& make, bool* all_fast = nullptr) {
  std::map<std::pair<std::size_t, bool>, PD> made;
  std::string error = "no primitive descriptor";
  AnchorChoice choice = ChooseAnchor(
      b, chain, dst_dims, pd_chain, pd_dims, kind,
      [&](std::size_t n, const dnnl::memory::desc& dst,
          const dnnl::primitive_attr& attr) -> std::optional<AnchorProbe> {
        PD pd;
        try {
          pd = make(attr, dst);
        } catch (const dnnl::error& e) {
          error = e.what();
          return std::nullopt;
        }
        if (!pd) return std::nullopt;
        made[{n, !dst.is_zero()}] = pd;
        return AnchorProbe{pd.impl_info_str(), pd.dst_desc(), IsSlowPrimitive(kind, pd)};
      });
  count = choice.count;
  if (all_fast) *all_fast = choice.fast;
  auto it = made.find({choice.count, choice.channels_last});
  if (it == made.end()) Unsupported(b, b.graph.node(chain.anchor), "oneDNN has no implementation: " + error);
  return it->second;
}

template <typename PD>
PD MakeChainPd(Builder& b, const Chain& chain, const Dims& dst_dims, const std::string& kind, std::size_t& count,
               const MakeAnchorPd<PD>& make, bool* all_fast = nullptr) {
  return MakeChainPd<PD>(b, chain, dst_dims, chain, dst_dims, kind, count, make, all_fast);
}

/// Creates the destination of a chain's primitive (`pd` already made with the
/// first `count` post-ops), in place over the `sum` addend when possible,
/// appends DNNL_ARG_DST and emits the step; then emits the remaining post-ops
/// as primitives of their own in place on that destination (see "Splitting"
/// above) and records chain.out. `src_slots` are the slots the primitive reads
/// (never written in place by the sum post-op). Without a sum post-op, an
/// elementwise anchor (binary, batch norm) writes over its source argument
/// `in_place_arg` (DNNL_ARG_*) when that buffer is read by nothing else and
/// never again and has the destination's layout.
void FinishChain(Builder& b, const Chain& chain, const dnnl::primitive_desc_base& pd, const std::string& kind,
                 const Dims& dst_dims, std::vector<std::pair<int, Arg>> args, const std::vector<int>& src_slots,
                 std::size_t count = kAllPostOps, int in_place_arg = kNoArg);

}  // namespace onnxfuse::backend
