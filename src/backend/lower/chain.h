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
// Builder::Emit warns. Anchors of backend/lower/ops.cc are not split by speed: a
// batch norm takes its chain whole, a binary anchor the longest prefix its
// primitive computes right (RightPrefix) and the rest as tail steps.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "backend/lower/builder.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

/// Throws Error(kUnsupported) "<model file>: node '<name>' (<op>): <why>".
[[noreturn]] inline void Unsupported(const Builder& b, const Node& node, const std::string& why) {
  throw Error(ErrorKind::kUnsupported, b.graph.source_path() + ": " + NodeLabel(node) + ": " + why);
}

/// Creates a primitive descriptor, turning oneDNN's "unimplemented" into
/// Error(kUnsupported) naming the node.
template <typename PD, typename Desc>
PD MakePd(const Builder& b, const Node& node, const Desc& desc, const dnnl::primitive_attr& attr) {
  try {
    return PD(desc, attr, b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
}

/// Input `i` of a non-anchor op in the layout it reads: as produced when fusing
/// (plain, or a convolution's channels-last / channel-blocked layout, which
/// oneDNN's elementwise, pooling, resampling and concat kernels take), plain
/// otherwise; other strided views (transposes) are made plain first.
Arg OpInput(Builder& b, const Node& node, std::size_t i);

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
  std::vector<double> scale, shift;   ///< folded per-channel affine y = scale*x + shift (empty: none)
  std::vector<PostOp> post_ops;
  bool norm_relu = false;             ///< BatchNormalization anchor: fused Relu (fuse_norm_relu)
};

/// A per-channel affine map y = scale * x + shift, in double.
struct ChannelAffine {
  std::vector<double> scale, shift;
};
/// An inference BatchNormalization as its per-channel affine map (ONNX
/// Operators.md, BatchNormalization: scale = gamma / sqrt(var + epsilon),
/// shift = B - mean * scale); nullopt for training_mode, a parameter not known
/// at build time, or parameters of different lengths (backend/lower/chain.cc).
std::optional<ChannelAffine> BatchNormAffine(Builder& b, const Node& bn);

/// Lowers one fusion group (members in topological order); `fuse` off: one chain per node.
void LowerGroup(Builder& b, const std::vector<NodeId>& nodes);

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
};
/// The first `count` post-ops on the anchor, with a channels-last destination or the anchor's own choice.
struct AnchorChoice {
  std::size_t count = 0;
  bool channels_last = false;
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
/// to pass to MakePostOps and FinishChain. `pd_chain` / `pd_dims`: as
/// ChooseAnchor. Throws Error(kUnsupported) naming the anchor when no candidate
/// can be created.
template <typename PD>
PD MakeChainPd(Builder& b, const Chain& chain, const Dims& dst_dims, const Chain& pd_chain, const Dims& pd_dims,
               const std::string& kind, std::size_t& count, const MakeAnchorPd<PD>& make) {
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
        return AnchorProbe{pd.impl_info_str(), pd.dst_desc()};
      });
  count = choice.count;
  auto it = made.find({choice.count, choice.channels_last});
  if (it == made.end()) Unsupported(b, b.graph.node(chain.anchor), "oneDNN has no implementation: " + error);
  return it->second;
}

template <typename PD>
PD MakeChainPd(Builder& b, const Chain& chain, const Dims& dst_dims, const std::string& kind, std::size_t& count,
               const MakeAnchorPd<PD>& make) {
  return MakeChainPd<PD>(b, chain, dst_dims, chain, dst_dims, kind, count, make);
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

/// Applies the chain's folded affine map (BatchNormalization) per output
/// channel: weights [out_channels, ...] scaled, bias scaled and shifted (backend/lower/conv.cc).
void FoldAffine(const Chain& chain, std::vector<float>& weights, std::vector<double>& bias, std::int64_t out_channels);
/// Input `input` of `node` (a bias) as `n` doubles times `scale`; zeros when absent (backend/lower/conv.cc).
std::vector<double> BiasOf(Builder& b, const Node& node, std::size_t input, std::int64_t n, double scale = 1.0);

/// A Conv's output dims and oneDNN geometry (strides, dilations minus 1,
/// left / right padding with auto_pad resolved) for input dims `x` and weight
/// dims `w` [O, I/group, k...] (ONNX Operators.md, Conv). Throws
/// Error(kUnsupported) for other than 1-D to 3-D, Error(kInvalidModel) when
/// the channels do not match (backend/lower/conv.cc).
struct ConvGeometry {
  Dims out, strides, dil, pl, pr;
};
ConvGeometry ConvGeometryOf(const Builder& b, const Node& node, const Dims& x, const Dims& w);

/// A primitive's bias (one value per output channel, BatchNormalization folded
/// in) as a packed constant of `anchor` (Builder::PackedConstant): dims [O],
/// or [1, O] with `as_row` (matmul's bias).
dnnl::memory BiasMemory(Builder& b, NodeId anchor, const std::vector<double>& bias, bool as_row = false);

// Anchors that take post-ops (backend/lower/conv.cc). Conv, Gemm and MatMul try our
// own kernels first (backend/lower/own_kernels.h).
void EmitConv(Builder& b, const Chain& chain);
/// Gemm (2-D A, constant B; transA, transB, alpha, beta) as a matmul: alpha
/// and a folded BatchNormalization in the prepacked B; C of one value per
/// output as the bias, a [M, 1] or [M, N] C as a binary post-op; on AVX2 our
/// own GEMM or GEMV first (EmitOwnGemm) (backend/lower/matmul.cc).
void EmitGemm(Builder& b, const Chain& chain);
/// MatMul (A computed at run time, B constant or not, batch dims broadcast)
/// as a matmul: [B.., M, K] x constant [K, N] as one 2-D product, on AVX2 our
/// own GEMM or GEMV first (EmitOwnGemm); a transposed operand read in place
/// where a fast kernel takes its strides (backend/lower/matmul.cc).
void EmitMatMul(Builder& b, const Chain& chain);
/// ConvTranspose as deconvolution_forward, with folded BatchNormalization and post-ops (backend/lower/deconv.cc).
void EmitDeconv(Builder& b, const Chain& chain);
// Other primitives (backend/lower/ops.cc).
/// Add, Sub, Mul, Div as binary_forward with the chain's post-ops, src0 the
/// run-time input of the output's shape, the other broadcast from plain; when
/// that is the second input of Sub or Div, c - x runs as -(x - c) and c / x as
/// (x / c)^-1 (an eltwise post-op first).
void EmitBinary(Builder& b, const Chain& chain);
void EmitBatchNorm(Builder& b, const Chain& chain);
void EmitEltwise(Builder& b, NodeId node);
/// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool as pooling_v2, or
/// our own max and global average pooling on channel-blocked and
/// channels-last data (backend/lower/pool.cc).
void EmitPool(Builder& b, NodeId node);
/// Max, Min, Sum and Mean of one or more inputs, multidirectionally
/// broadcast (ONNX Max-13 ...), as a chain of binary_max / binary_min /
/// binary_add steps on plain buffers; Mean scales the last by 1/N (an
/// eltwise_linear post-op); one input is the output itself, without a step.
/// Refused when no run-time input has the output's shape.
void EmitVariadic(Builder& b, NodeId node);
/// Clip (opset 11+) whose min or max is computed at run time (a scalar): a
/// binary_max with min, then a binary_min with max, on plain buffers. Clip
/// with constant bounds is an eltwise_clip (EltwiseOf) instead.
void EmitClip(Builder& b, NodeId node);
/// Softmax and LogSoftmax (softmax_forward, logsoftmax_forward) over a plain
/// buffer; before opset 13 over the input coerced to 2-D at `axis`.
void EmitSoftmax(Builder& b, NodeId node);
/// Concat as a concat primitive or memcpy runs; fused, Concat ->
/// BatchNormalization (-> Relu) as TryConcatNorm's one pass, or deferred for
/// readers that take its parts (backend/lower/concat.cc).
void EmitConcat(Builder& b, NodeId node);
/// The non-empty parts of a Concat along channels (axis 1) of run-time
/// tensors that agree on every other dim, and the concatenation's dims.
struct ChannelParts {
  std::vector<ValueId> values;
  Dims out;
};
/// `node`'s ChannelParts; nullopt for any other Concat (backend/lower/concat.cc).
std::optional<ChannelParts> ChannelPartsOf(const Builder& b, const Node& node);
/// Concat (`node`, along channels) whose only reader is an inference
/// BatchNormalization with constant parameters, optionally followed by its
/// only reader Relu, on channels-last or channel-blocked sources: one custom
/// kernel writing the normalized result, channel-blocked when the parts are
/// and start at block boundaries, else channels-last. False (nothing
/// emitted) when the pattern or the layouts do not match (backend/lower/concat_norm.cc).
bool TryConcatNorm(Builder& b, const Node& node);
/// A Conv chain reading a deferred concat (Builder::deferred_concats): one
/// convolution per concatenated part with that part's slice of the weights,
/// accumulating (`sum` post-op) into one destination, the last one with the
/// bias and the chain's post-ops. False, with nothing emitted, when the chain
/// has other than eltwise post-ops or a part would run a slow implementation
/// (backend/lower/concat.cc).
bool EmitConvOverConcatParts(Builder& b, const Chain& chain);
/// Emits the concat deferred for `v` after all, for a reader that cannot take
/// the parts (backend/lower/concat.cc).
void EmitDeferredConcat(Builder& b, ValueId v);
/// A pooling `node` reading a deferred concat pools each part (pooling works
/// per channel: pool(concat(a, b)) = concat(pool(a), pool(b))); its output is
/// deferred in turn when only group-1 Convs read it, else concatenated, now
/// from the smaller pooled parts (backend/lower/concat.cc). `pool(part)` emits the
/// pooling of one part and returns its destination.
void PoolConcatParts(Builder& b, const Node& node, const std::function<Act(const Act& part)>& pool);
/// x * k or x / k (k a constant scalar, x computed at run time) read only by a
/// MatMul, once: recorded in Builder::deferred_scalars instead of lowered, its
/// uses not consumed; (k A) B = k (A B), so the MatMul scales its result. False,
/// with nothing done, otherwise (backend/lower/channel_scale.cc).
bool DeferScalarScale(Builder& b, NodeId node);
/// For a MatMul operand `v`: when `v` is a deferred x * k or x / k, consumes
/// that node, multiplies `scale` by k or 1/k and returns x; else returns `v`.
ValueId TakeScalarScale(Builder& b, ValueId v, float& scale);
/// PRelu as prelu_forward (slope broadcast to the input's rank) (backend/lower/ops.cc).
void EmitPrelu(Builder& b, NodeId node);
/// Resize (opsets 10-18; nearest and linear) as resampling_forward where
/// oneDNN's coordinate mapping equals ONNX's for every output index (backend/lower/resize.cc).
void EmitResize(Builder& b, NodeId node);
// Layout-only ops and build-time values (backend/lower/views.cc).
/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (views), Transpose (a reorder).
bool LowerView(Builder& b, NodeId node);
/// Folds the node when all its inputs are known at build time (or it is Shape
/// of an activation). Returns false when it cannot be folded.
bool TryFold(Builder& b, NodeId node);
/// Folds, in graph order, every node that build-time evaluation handles and
/// whose inputs are all constants, before any group is lowered: a lowering
/// that looks ahead into another group (LayerNorm's affine Mul and Add) then
/// sees a weight that an Identity of an initializer produces (torch's export
/// of shared parameters) as the constant it is, whatever the groups' order.
void PrefoldConstants(Builder& b);

// Reductions and recognized decompositions (backend/lower/norm.cc); standard-library elementwise functions (backend/lower/unary.cc).
void EmitReduce(Builder& b, NodeId node);
/// True for the elementwise math ops EmitStdUnary lowers: Erf, Log, the
/// trigonometric and hyperbolic functions and their inverses, Floor, Ceil,
/// Round, Sign, Softsign, ThresholdedRelu, Selu, Shrink, Celu (backend/lower/unary.cc).
bool IsStdUnary(const Node& node);
/// One of those as a parallel loop of the standard library's function over a
/// plain buffer: oneDNN 2.6 has none of them but Log, and its eltwise_log is
/// off by 1.4e-6 at log(1) (ONNX node test test_log_example wants 0 within
/// 1e-7), so Log is no post-op either.
void EmitStdUnary(Builder& b, NodeId node);
/// Pow(X, Y) whose Y is a constant of several values (a scalar Y is an
/// eltwise_pow, EltwiseOf): Y broadcast to X's shape at build time, then a
/// parallel loop of std::pow over a plain buffer. Refused when Y is computed
/// at run time or would broadcast X to a larger shape (backend/lower/unary.cc).
void EmitPow(Builder& b, NodeId node);
/// Lowers the LayerNormalization decomposition starting at ReduceMean `node`
/// (fused mode) and absorbs its nodes; false when the pattern does not match.
bool TryLayerNorm(Builder& b, NodeId node);
/// The output of the Gelu (erf) decomposition applied to `x`, if `x` feeds one;
/// with `absorb`, its nodes are consumed and marked absorbed.
std::optional<ValueId> MatchGelu(Builder& b, ValueId x, bool absorb);
/// Lowers the Gelu decomposition whose Div is `div` as one pass of our Gelu
/// kernel (backend/kernels/activation.h) in the layout of its input.
void EmitGelu(Builder& b, NodeId div);
/// One layer_normalization_forward over the last axis of `src` (a plain view
/// [.., C] of `dims`' elements): y = (x - mean) / sqrt(var + epsilon) * scale + shift,
/// `scale` and `shift` [C]. With `mean` / `variance` not null, the primitive runs
/// as forward_training and also writes the statistics ([rows]) there.
/// Returns the destination (plain, logical dims `dims`) (backend/lower/norm.cc).
Act EmitLayerNormPrimitive(Builder& b, const Node& node, const std::string& label, const Arg& src, const Dims& dims,
                           float epsilon, const Arg& scale, const Arg& shift, Act* mean = nullptr,
                           Act* variance = nullptr);
/// LayerNormalization (opset 17) as layer_normalization_forward over a 2-D view;
/// InstanceNormalization as batch_normalization over a [1, N*C, spatial] view
/// (backend/lower/norm_ops.cc).
void EmitLayerNormalization(Builder& b, NodeId node);
void EmitInstanceNormalization(Builder& b, NodeId node);
/// Pad, Slice (any steps), Split (constant sizes) and Gather (constant indices)
/// of run-time tensors (backend/lower/slice.cc); false when `node` is none of these.
/// Fused, a Slice with steps >= 1, each Split output and a Gather of one run
/// of indices are views of the input's buffer (Builder::NewView), no step.
bool LowerSlice(Builder& b, NodeId node);

/// The implementation to run for `pd`'s operation and attributes: among
/// oneDNN's implementations that read and write the same layouts as `pd` and
/// are not slow (IsSlowImpl), the fastest on this CPU, timed at build time
/// (median of 7 runs in interleaved rounds, in ms, on scratch buffers for `arg_keys`, the DNNL_ARG_*
/// the step will bind); `pd`'s own implementation, oneDNN's first choice,
/// unless another is at least 5% faster. Replaying a plan file, the one it
/// stored for `key` (Builder::StoredImpl) when it is among them (impl_choice.cc).
/// Throws dnnl::error only when oneDNN fails to create or run a candidate.
dnnl::primitive_desc ChooseImpl(Builder& b, const dnnl::primitive_desc& pd, const std::string& kind,
                                const std::string& key, const std::vector<int>& arg_keys);

/// The node of type `op` (default domain, not yet absorbed) reading `v`, when
/// it is the only read of `v` and `v` is not a graph output; else nullptr (backend/lower/norm.cc).
const Node* SoleUser(const Builder& b, ValueId v, const char* op);
/// True when `n` is a Conv (default domain, group 1) with constant weights
/// reading `v` once, as its data input X (backend/lower/norm.cc).
bool ConvReadsAsData(const Builder& b, const Node& n, ValueId v);
/// True for the pooling ops EmitPool lowers (MaxPool, AveragePool and their
/// Global forms): each works per channel, in any layout (backend/lower/norm.cc).
bool IsPooling(const std::string& op);
/// Marks `nodes` lowered as part of another node's pattern: their uses are
/// consumed and LowerGroup skips them when their group comes (backend/lower/norm.cc).
void Absorb(Builder& b, const std::vector<const Node*>& nodes);

/// Eltwise algorithm of a unary node (Relu, Sigmoid, Tanh, Clip, ...): the
/// post-ops it lowers to, empty when the node is not a supported elementwise op.
std::vector<PostOp> EltwiseOf(Builder& b, const Node& node);

}  // namespace onnxfuse::backend
