// The compile-time state of an executable plan, shared by the lowering files.
//
// The Builder walks the graph once, in execution order, and records:
//   - for each value: a host Tensor (constant or folded at build time) or an
//     Act (an activation: which arena slot holds it and in which layout);
//   - Steps: one oneDNN primitive each, with its arguments as arena-slot views
//     or memories fixed at build time (prepacked weights, biases, constants);
//   - Slots: the activation buffers, later placed in one arena (arena.h) by
//     the lifetimes the steps' arguments imply.
// Remaining-use counts per value tell when a slot may be overwritten in place
// (the residual `sum` post-op).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/packed_constants.h"
#include "backend/kernels/pointwise.h"
#include "ir/graph.h"
#include "ir/varying_dims.h"
#include "ir/tensor_io.h"

namespace onnxfuse::backend {

/// One activation buffer of the arena, or a view into one (a sub-tensor:
/// Slice, Split, Gather of one run), which has no bytes of its own.
struct Slot {
  std::int64_t bytes = 0;
  std::int64_t offset = -1;        ///< set by the arena planner; a view: its root's plus view_offset
  int root = -1;                   ///< a view: the slot whose buffer it points into (never a view itself)
  std::int64_t view_offset = 0;    ///< a view: bytes from the start of the root's buffer
  bool graph_input = false;        ///< written by Run before the first step
  bool graph_output = false;       ///< read by Run after the last step
  std::vector<ValueId> values;     ///< values whose data (in some layout) lives here
};

/// Where an activation lives and how it is laid out.
///
/// Run-time tensors have one of these storage types (StorageTypeOf): FLOAT,
/// float32 in any layout oneDNN picks, which every lowering takes; INT64,
/// every integer and bool value as dense row-major int64 (bool: 0 or 1), which
/// only the host steps (host_step.h) and typed views read: its md is the
/// s32 tensor [dims..., 2], so that sizes and plain views stay exact; and
/// UINT8 or INT8, the output of a QuantizeLinear that int8 convolutions read
/// (md u8 or s8, in any layout; backend/lower/fused/int8_conv.h), which only
/// they and its DequantizeLinear readers' lowering take.
struct Act {
  int slot = -1;
  dnnl::memory::desc md;
  Dims dims;  ///< logical ONNX dims (md may be rank-1 [1] for a scalar)
  std::int32_t elem_type = onnx::TensorProto::FLOAT;  ///< storage type: FLOAT, INT64, UINT8 or INT8
  /// UINT8 and INT8: the value each integer q stands for is (q - zero_point) * scale.
  float scale = 1;
  std::int64_t zero_point = 0;
  /// UINT8 with a zero point computed at run time (dynamic quantization,
  /// backend/lower/fused/dynamic_quantize.h): the slot of its one s32 value,
  /// which stands for zero_point; -1 otherwise.
  int zero_point_slot = -1;
};

/// The memory descriptor of a dense row-major tensor of `dims` in storage type
/// `elem_type`: PlainDesc for FLOAT; s32 [dims..., 2] for INT64 (8 bytes an element).
dnnl::memory::desc StorageDesc(const Dims& dims, std::int32_t elem_type);

/// A primitive argument: a view of an arena slot (slot >= 0) or a fixed memory.
struct Arg {
  int slot = -1;
  dnnl::memory::desc md;
  dnnl::memory fixed;
};

/// A kernel of our own for what oneDNN 2.6 lacks (Erf, ...): gets the data
/// pointers of the step's arguments, in order.
using CustomKernel = std::function<void(const std::vector<void*>& data)>;

/// One primitive (or custom kernel) executed per inference.
struct Step {
  dnnl::primitive prim;
  CustomKernel custom;  ///< set instead of prim for a custom kernel
  std::vector<std::pair<int, Arg>> args;  ///< DNNL_ARG_* -> argument
  dnnl::memory::desc scratchpad;          ///< zero md when none; a custom kernel's: bytes (u8)
  bool reorder = false;
  std::string kind;   ///< "conv", "matmul", "reorder", ...
  std::string label;  ///< the ONNX nodes it executes
  std::string impl;   ///< oneDNN's implementation name (impl_info_str)
  std::string layout; ///< layout of its destination
  int group = -1;       ///< Builder::group when it was emitted
  std::string pattern;  ///< Builder::group_pattern when it was emitted
  std::string note;     ///< why it runs as it does, when not as asked ("float, not int8: ..."); "" otherwise
  std::string data_type;  ///< its source's element type ("f32", "u8", "s8"); "" for a custom kernel
  bool any_shape = false;  ///< a primitive made with run-time dims (ScheduleStep::any_shape)
  bool slow = false;       ///< IsSlowPrimitive (ScheduleStep::slow)
  double flops = 0;        ///< ScheduleStep::flops
  std::int64_t bytes = 0;  ///< ScheduleStep::bytes
};

/// The floating-point operations of a convolution (a multiply-add counted as
/// 2) whose output has `dst_elements` elements in `dst_channels` channels and
/// whose weights have `weight_elements`: each output sums weight_elements /
/// dst_channels products (C / group x kernel taps). ScheduleStep::flops.
double ConvFlops(std::int64_t dst_elements, std::int64_t dst_channels, std::int64_t weight_elements);

/// An implementation to avoid when another exists: oneDNN's reference
/// kernels (`ref:`) for any primitive, and oneDNN's gemm-based
/// (de)convolutions (im2col + sgemm, far slower than the direct jit / brgemm
/// kernels; not our own GEMM convolution, "onnxfuse:gemm", nor oneDNN's
/// convolution as an inner product, "ip:x64:gemm:jit"). Inner products
/// and matmuls run on gemm by design: not slow; nor do the RNN primitives
/// (kinds lstm, gru, lbr_gru, rnn), whose "ref" driver runs on jit sgemm.
bool IsSlowImpl(const std::string& kind, const std::string& impl);
/// IsSlowImpl for a primitive whose descriptor is known, with one exception:
/// a deconvolution whose kernel is 1x1 on oneDNN's gemm (oneDNN 2.6 has no
/// jit one for a 1x1 kernel with padding or a stride). It is one GEMM and a
/// col2im that writes each output once, no im2col: [1,64,56,56] -> 32
/// channels at stride 2 takes 0.89 ms at 1 thread on a Zen 4, ONNX Runtime
/// 1.55 ms, and the same deconvolution as a 3x3 one with zero taps on
/// oneDNN's jit kernel 2.44 ms (`onnx-fuse run --threads 1`, `compare.js --time`).
bool IsSlowPrimitive(const std::string& kind, const dnnl::primitive_desc_base& pd);

class Builder {
 public:
  /// `packed`: where prepacked constants are recorded or, replaying a plan
  /// file, taken from (nullptr: neither).
  /// `releasable`: the same graph, non-const, when its initializers may be
  /// freed once lowered (ReleaseConsts); nullptr keeps them.
  Builder(const Graph& graph, bool fuse, dnnl::engine engine, PackedConstants* packed = nullptr,
          Graph* releasable = nullptr);

  const Graph& graph;
  const bool fuse;  ///< fused mode: format_tag::any and post-ops; otherwise plain layouts
  /// CompileOptions::fake_quantize: false lowers a QuantizeLinear ->
  /// DequantizeLinear pair as the identity (backend/lower/fused/quantize_dequantize.h).
  bool fake_quantize = true;
  /// CompileOptions::varying_dims: the dims that change from one compiled
  /// shape to the next (nullptr: none).
  std::shared_ptr<const VaryingDims> varying_dims;
  dnnl::engine engine;
  dnnl::stream stream;  ///< for build-time reorders of weights

  // --- values ---------------------------------------------------------------
  /// One flag per dim of `v` (at its rank here): true where it changes from
  /// one compiled shape to the next (varying_dims; all false without them).
  std::vector<bool> VaryingDimsOf(ValueId v) const;
  /// True when some dim of `v` changes from one compiled shape to the next.
  bool DimsVary(ValueId v) const;
  bool IsConst(ValueId v) const;
  /// IsConst, with its data still at hand: not an initializer that
  /// ReleaseConsts freed (Const would throw).
  bool HasConstData(ValueId v) const;
  /// The value's host tensor (initializer, Constant node or folded). Throws
  /// Error(kUnsupported) naming `user` when the value is not known at build time.
  const Tensor& Const(ValueId v, const Node& user);
  /// Const, as a tensor a step may keep for as long as it runs (a host
  /// step's table). An initializer borrowed from another graph
  /// (Graph::BorrowConstants) is shared with the other compiles of the same
  /// PackedConstants (PackedConstants::decoded): the schedules of one
  /// session at many shapes hold one copy, decoded once.
  std::shared_ptr<const Tensor> SharedConst(ValueId v, const Node& user);
  /// `test` of constant `v`'s values, named `fact`: computed here, or taken
  /// from an earlier compile of the same model (PackedConstants::facts) when
  /// `v` is shared with it, without decoding the values again.
  bool ConstFact(ValueId v, const Node& user, const std::string& fact, const std::function<bool(const Tensor&)>& test);
  bool IsAct(ValueId v) const { return v < acts_.size() && acts_[v].has_value(); }
  /// The float32 activation `v`. Throws Error(kUnsupported) naming `user` when
  /// `v` is an INT64 (integer or bool) run-time tensor, which only host steps
  /// take, and Error(kInternal) when `v` is not computed yet.
  const Act& ActOf(ValueId v, const Node& user) const;
  /// The activation `v` whatever its storage type (host steps, typed views,
  /// graph outputs). Error(kInternal) when `v` is not computed yet.
  const Act& AnyActOf(ValueId v, const Node& user) const;
  /// True when `v` is an activation of storage type INT64.
  bool IsIntAct(ValueId v) const { return IsAct(v) && acts_[v]->elem_type == onnx::TensorProto::INT64; }
  /// True when `v` is an activation of storage type UINT8 or INT8 (a quantized activation).
  bool IsInt8Act(ValueId v) const {
    return IsAct(v) && (acts_[v]->elem_type == onnx::TensorProto::UINT8 || acts_[v]->elem_type == onnx::TensorProto::INT8);
  }
  /// Dims of a constant or an activation.
  Dims DimsOfValue(ValueId v, const Node& user);
  /// The dims of constant `v` (IsConst), without decoding its values when
  /// they are not decoded yet. Throws what Const throws for a non-constant.
  Dims ConstDims(ValueId v, const Node& user);
  void SetConst(ValueId v, Tensor t);
  /// Makes `v`, the output of node `producer` whose inputs are all constants,
  /// a constant evaluated only when Const first reads it, by `fold`: a
  /// DequantizeLinear of int8 weights, whose float values an int8
  /// convolution never reads (PrefoldConstants). IsConst is true from now on.
  void DeferFold(ValueId v, NodeId producer);
  /// Evaluates node `id` at build time (TryFold, views.h): what Const calls
  /// for a deferred value. Set by PrefoldConstants.
  std::function<bool(Builder&, NodeId)> fold;
  /// Records an activation; checks its dims against the loader's shape inference.
  void SetAct(ValueId v, Act act);
  /// Makes constant `v` (a float32 initializer, Constant node or folded
  /// value) also an activation: a slot that a reorder step fills from the
  /// constant at the start of every inference, for a node whose inputs are all
  /// known but which no build-time evaluator handles (ReduceMax of a Constant
  /// in torchvision's detection transform). Throws Error(kUnsupported) naming
  /// `user` for a constant of another element type.
  void ConstAsAct(ValueId v, const Node& user);

  // --- liveness -------------------------------------------------------------
  /// One use of each input of `node` is done.
  void Consume(const Node& node);
  /// Drops the host copies of the inputs of `nodes` that no later node reads
  /// and that the model stores (initializers, Constant nodes): after a group is
  /// lowered its weights live on only in their prepacked form, which keeps the
  /// compiler's peak memory near the model's size. Values folded at build
  /// time that no later node reads go too. The inputs of a DequantizeLinear
  /// stay (int8 convolutions read them later).
  void ReleaseConsts(const std::vector<NodeId>& nodes);
  /// True when no value stored in `slot`, in the buffer it views or in another
  /// view of that buffer is read again, and none is a graph output; with
  /// `reading`, the node being lowered (not consumed yet), apart from its reads.
  bool DeadNow(int slot, const Node* reading = nullptr) const;

  // --- buffers --------------------------------------------------------------
  /// A fresh slot sized for `md`.
  Act NewAct(const Dims& dims, const dnnl::memory::desc& md);
  /// A view of `slot`'s data from `byte_offset` bytes past its start, laid out
  /// as `md` (strides without offset0: primitives get a pointer to its first
  /// element); `slot` itself when the offset is 0.
  Act NewView(int slot, std::int64_t byte_offset, const Dims& dims, const dnnl::memory::desc& md);
  /// The slot whose buffer `slot` lives in: its root when a view, else itself.
  int RootOf(int slot) const;
  /// True when slots `a` and `b` (-1: none) live in the same buffer.
  bool SameBuffer(int a, int b) const { return a >= 0 && b >= 0 && RootOf(a) == RootOf(b); }
  /// `v` in layout `want`: as is, through a plain view when the bytes already
  /// match (`want` may then have other dims with as many elements: a reshape),
  /// or through one reorder step (shared by all consumers wanting it).
  Arg Use(ValueId v, const dnnl::memory::desc& want, const Node& user);
  /// Use for an activation of storage type UINT8 or INT8 (`want` of its
  /// data type); Error(kInternal) for any other.
  Arg UseQuantized(ValueId v, const dnnl::memory::desc& want, const Node& user);
  /// `v` in plain row-major layout with `dims` (a reshape view when allowed).
  Arg UsePlain(ValueId v, const Node& user);
  /// `v` in whatever layout it has.
  Arg UseAsIs(ValueId v, const Node& user);
  /// A new value stored in an existing slot (in-place ops, reshape views).
  void AddToSlot(int slot, ValueId v) { slots[static_cast<std::size_t>(slot)].values.push_back(v); }

  // --- constants ------------------------------------------------------------
  /// f32 memory in `md` (plain) holding a copy of `data` (md.get_size() bytes).
  dnnl::memory HostMemory(const dnnl::memory::desc& md, const float* data);
  /// f32 memory in `md` over `data` itself, no copy: a source for Prepack,
  /// valid only while `data` lives.
  dnnl::memory HostView(const dnnl::memory::desc& md, const float* data) const;
  /// `plain` reordered (copied, when the layouts agree) into new memory in
  /// `want`, once, now: weights prepacking.
  dnnl::memory Prepack(const dnnl::memory& plain, const dnnl::memory::desc& want);
  /// The constant operand `argument` ("weights", "bias") of the primitive
  /// anchored at `node`, in layout `want`: Prepack(plain(), want), recorded
  /// when compiling for a plan file; when replaying one, the stored constant,
  /// reordered if this CPU's primitive chose another layout, and plain() is
  /// not called.
  dnnl::memory PackedConstant(NodeId node, const std::string& argument, const dnnl::memory::desc& want,
                              const std::function<dnnl::memory()>& plain);

  /// Replaying a plan file: the implementation its schedule stored for `key`
  /// (PackedConstants::implementations); otherwise nullptr.
  const std::string* StoredImpl(const std::string& key) const;

  // --- primitives -----------------------------------------------------------
  /// Attributes with a user-managed scratchpad and the given post-ops.
  dnnl::primitive_attr Attr(const dnnl::post_ops& ops = dnnl::post_ops()) const;
  /// Appends a step for `pd` (logs its implementation; in fused mode, warns on
  /// a slow one, IsSlowImpl: the chain lowering has already tried to avoid it).
  void Emit(const dnnl::primitive_desc_base& pd, std::string kind, std::string label, std::vector<std::pair<int, Arg>> args,
            const dnnl::memory::desc& dst_md);
  /// Appends a custom-kernel step; `impl` names the kernel in step lists.
  /// Custom kernels index their buffers densely: an argument that is not
  /// (IsDense, e.g. a sub-tensor view) is an internal error. With
  /// `scratch_bytes` > 0 the kernel's last pointer is the plan's scratchpad,
  /// shared with every other step, of at least that many bytes (64-byte
  /// aligned).
  void EmitCustom(std::string kind, std::string label, std::vector<std::pair<int, Arg>> args, CustomKernel kernel,
                  const dnnl::memory::desc& dst_md, std::string impl = "onnxfuse:custom", std::int64_t scratch_bytes = 0);
  /// A reorder step from `src` into a fresh slot in `want`; returns the new Act.
  /// `dims_vary`: the dims change from one compiled shape to the next
  /// (VaryingDimsOf); a float32 copy between two dense layouts without
  /// blocks then runs on our StridedCopy (backend/kernels/layout.h), which
  /// takes its extents as data, instead of a oneDNN reorder generated for
  /// this one shape.
  Act EmitReorder(const Arg& src, const Dims& dims, const dnnl::memory::desc& want, const std::string& label,
                  bool dims_vary = false);

  std::vector<Step> steps;
  /// The fusion group being lowered (FusedGroup::id, -1: none) and its library
  /// pattern ("" when none): every step emitted is labelled with them.
  int group = -1;
  std::string group_pattern;
  std::vector<Slot> slots;
  /// Graph inputs with an unknown dim that Compile took as 1.
  std::vector<std::string> defaulted_inputs;
  std::int64_t weight_bytes = 0;
  /// A channel Concat not materialized (yet): its readers, convolutions and
  /// poolings, read the concatenated parts directly (backend/lower/ops/concat.cc).
  struct DeferredConcat {
    std::string name;        ///< the Concat node's, for step labels
    std::vector<Act> parts;  ///< in order along channels
    Dims out;                ///< the concatenation's dims
  };
  std::map<ValueId, DeferredConcat> deferred_concats;
  /// Products x * s (s a [1, C, 1, 1] gate) not made: their reader, a
  /// convolution, scales its weights by s instead (backend/lower/fused/channel_scale.cc).
  /// Mul node by value.
  std::map<ValueId, NodeId> deferred_scales;
  /// Products x * k and quotients x / k (k a constant scalar) not made: their
  /// reader, a MatMul, scales its result instead (backend/lower/fused/channel_scale.cc).
  /// Mul or Div node by value.
  std::map<ValueId, NodeId> deferred_scalars;
  /// Steps running PointwiseConv, in schedule order: each is told the next
  /// one's first weight panel to prefetch (LinkPointwise, backend/lower/own_kernels/pointwise.cc).
  struct PointwiseStep {
    std::size_t step = 0;
    PointwiseNext first_panel;
    std::shared_ptr<PointwiseNext> next;
  };
  std::vector<PointwiseStep> pointwise_steps;
  /// Nodes already lowered as part of another node's pattern (swish's Mul,
  /// LayerNormalization and Gelu decompositions): skipped when their group comes.
  std::vector<bool> absorbed;

 private:
  /// Use's work, for the activation `a` of `v`.
  Arg UseAct(const Act& a, ValueId v, const dnnl::memory::desc& want, const Node& user);
  /// Names `step` (kind, label, destination layout, the current group and
  /// pattern), logs it and appends it: what Emit and EmitCustom share.
  void Push(Step step, std::string kind, std::string label, const dnnl::memory::desc& dst_md);

  /// PackedConstants::decoded's key of constant `v`: its owner graph and
  /// name; empty when it is not shared (not borrowed, or no packed_).
  std::string SharedKey(ValueId v) const;

  PackedConstants* packed_;
  Graph* releasable_;
  std::vector<std::shared_ptr<const Tensor>> consts_;  // decoded or folded; shared with packed_->decoded
  std::vector<bool> folded_released_;  ///< folded values ReleaseConsts dropped: still constants
  std::vector<NodeId> deferred_;       ///< DeferFold: the producer to evaluate on first read; kNoNode: none
  std::vector<std::optional<Act>> acts_;
  std::vector<std::vector<Act>> alternates_;  ///< the value in other layouts (reorder results)
  std::map<int, std::vector<int>> views_of_;   ///< root slot -> the view slots into its buffer (NewView)
  std::vector<int> remaining_;                ///< uses not yet lowered, per value
};

/// Marks `nodes` lowered as part of another node's pattern: their uses are
/// consumed and LowerGroup skips them when their group comes. Here, next to
/// Builder::absorbed, since it changes nothing but the builder's state.
void Absorb(Builder& b, const std::vector<const Node*>& nodes);

}  // namespace onnxfuse::backend
