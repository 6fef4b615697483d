// The executable plan: a Graph and its FusionPlan compiled into a schedule of
// oneDNN (2.6) CPU primitives, and the `onnx-fuse run` job that times it.
//
// Compile walks the fusion groups in dependency order and lowers each one to
// as few primitives as it can (src/backend/lower/core/chain.h): a Conv, Gemm or MatMul
// with inference BatchNormalization folded into its weights and bias and the
// group's elementwise tail as post-ops (eltwise; `sum` for a same-shape
// residual Add, written in place over the addend's buffer when nothing reads it
// later; `binary` for broadcast Add/Sub/Mul/Div such as squeeze-and-excitation
// gates), x*Sigmoid(x) as swish, x*HardSigmoid(x) as hardswish. The exporters'
// decompositions of LayerNormalization (ReduceMean/Sub/Pow/Sqrt/Div[/Mul/Add])
// and of erf-Gelu become one LayerNorm kernel step / gelu_erf primitive each.
// Also lowered: ConvTranspose (deconvolution_forward, BN folded, post-ops),
// pooling (max, average, global), Concat, Softmax, reductions, the
// LayerNormalization op (our LayerNorm kernel), InstanceNormalization
// (batch_normalization over an [1, N*C, spatial] view), PRelu (prelu), Resize
// (resampling, only where its pixel mapping equals ONNX's), Transpose, Pad,
// Slice (any steps), Gather (constant indices), Erf (a parallel loop: oneDNN
// 2.6 has no erf).
// Shape-only subgraphs (Shape, Gather, Unsqueeze, Concat, Reshape, Expand,
// Where... on constants) are evaluated at build time; Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Dropout, zero Pad and (fused) Transpose are
// views without copies. With `fuse = false` every ONNX node becomes its own
// primitive in plain layouts (NCHW, weights prepacked): the baseline.
//
// Layouts: fused convolutions are created with format_tag::any and pick their
// layout (blocked nChw16c or NHWC on AVX-512); each value keeps the layout its
// producer chose and a reorder is inserted only where a consumer needs a
// different one. Weights are reordered once, at compile time. All activations
// live in one arena whose offsets are planned from buffer lifetimes
// (src/backend/runtime/arena.h). Graph inputs and outputs are plain row-major.
//
// Element types: float32, float16 and float64 values are held and computed as
// float32 (float16 results are rounded to half precision where a host step
// computes them); int64, int32, int16, int8, uint64, uint32, uint16, uint8 and
// bool values as int64 (bool 0/1), computed by host steps
// (src/backend/lower/core/host_step.h): integer and bool tensors computed at run
// time (shape arithmetic, indices, masks), and float ops no primitive covers.
// Inputs and outputs are Tensors in that storage (tensor_io.h), typed with the
// graph's element types.
//
// Shapes are static: every graph input dim must be known (symbolic dims are
// pinned with LoadOptions::input_shapes, otherwise taken as 1). Slow implementations (oneDNN's
// reference `ref:` kernels, gemm-based convolutions) are avoided in fused mode:
// when an anchor gets one only because of some of its post-ops (or cannot be
// created with them), its chain is split: the anchor keeps the longest prefix
// of post-ops that leaves every step fast (trying a channels-last destination
// too), and the rest run after it as binary / eltwise primitives in place on
// its output (src/backend/lower/core/chain.h, "Splitting"). What stays slow (nothing
// faster exists) is logged as a warning; spdlog at debug level lists every
// step with its implementation, and each split.
//
// Threads: oneDNN (OpenMP build) fixes the thread count of a primitive when it
// is created; RunJob calls omp_set_num_threads before compiling anything.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "ir/varying_dims.h"
#include "ir/tensor_io.h"
#include "onnxfuse/plan_stats.h"

namespace onnxfuse {

namespace backend {
struct PackedConstants;
}

struct CompileOptions {
  CompileOptions(bool fuse_mode = true) : fuse(fuse_mode) {}  // NOLINT: implicit, so CompileOptions{false} reads well
  bool fuse = true;  ///< false: one primitive per ONNX node, plain layouts, the FusionPlan is ignored
  /// false: every QuantizeLinear read by DequantizeLinear nodes alone runs as
  /// the identity, in both modes: the float graph a QDQ model quantizes, which
  /// VerifyOutputs (verify.h) compares where quantization would turn any float
  /// rounding into whole steps.
  bool fake_quantize = true;
  /// Prepacked constants to record (plan-file writer) or reuse (plan-file
  /// reader); see src/backend/lower/core/packed_constants.h. nullptr: neither.
  std::shared_ptr<backend::PackedConstants> packed;
  /// The dims of the graph's values that change from one compiled shape to
  /// the next (ir/varying_dims.h): a session serving a model at many input
  /// shapes sets them, and a product with such dims runs on a kernel made
  /// once for every shape instead of one compiled for this one
  /// (backend/lower/ops/matmul.cc). nullptr: every dim is fixed.
  std::shared_ptr<const VaryingDims> varying_dims;
};

/// One step of a compiled schedule.
struct ScheduleStep {
  std::string kind;    ///< "conv", "matmul", "reorder", ...
  std::string label;   ///< the ONNX nodes it executes, e.g. "Conv_0+Relu_1"
  std::string impl;    ///< oneDNN's implementation (impl_info_str), or "onnxfuse:custom"
  std::string layout;  ///< its destination's layout, e.g. "nChw16c"
  /// The fusion group whose lowering emitted it (FusedGroup::id); -1 outside
  /// any group (a graph output's copy) and in unfused mode. A step may also
  /// execute nodes it absorbed from a neighbouring group (its label names them).
  int group = -1;
  std::string pattern;  ///< that group's FusedGroup::pattern_name, "" when none
  /// Why it runs as it does where that is not what the model asks: a QDQ
  /// convolution on float kernels says why not int8
  /// (backend/lower/fused/int8_conv.h). "" otherwise.
  std::string note;
  /// The element type of the primitive's source as oneDNN names it ("f32";
  /// "u8" or "s8" for an int8 convolution, whatever its implementation is
  /// called); "" for a kernel of our own.
  std::string data_type;
  /// A oneDNN primitive made with dims given at run time: the same primitive
  /// (oneDNN's primitive cache) serves every shape a session compiles
  /// (backend/lower/fused/any_shape_matmul.h, int8_matmul.h).
  bool any_shape = false;
  /// On an implementation to avoid (IsSlowPrimitive, backend/lower/core/builder.h):
  /// oneDNN's reference kernels, gemm-based convolutions. `run --json` lists these.
  bool slow = false;
  /// The work of one run, for the roofline (`run --profile`): floating-point
  /// operations of the ONNX ops it computes, a multiply-add counted as 2
  /// (convolutions and products as the direct algorithm, whatever the kernel
  /// does; any other step one per output element), and bytes: the sizes of its
  /// operands (inputs, weights, outputs), each read or written once, the least
  /// any kernel moves.
  double flops = 0;
  std::int64_t bytes = 0;
};


/// A compiled, runnable plan. Movable, not copyable; Run is not reentrant.
class ExecutablePlan {
 public:
  /// Throws Error(kUnsupported) naming the node and op for an op or attribute the
  /// backend does not handle (never a crash at run time), Error(kInvalidModel) for
  /// inconsistent shapes.
  static ExecutablePlan Compile(const Graph& graph, const FusionPlan& plan, const CompileOptions& options = {});

  /// Compile, freeing each initializer's data in `graph` (Graph::ReleaseInitializer)
  /// as soon as the group reading it is lowered: peak memory is about the model's
  /// size plus the packed weights compiled so far, not both in full. `graph`
  /// keeps its structure and types but cannot be compiled again.
  static ExecutablePlan CompileReleasingWeights(Graph& graph, const FusionPlan& plan, const CompileOptions& options = {});

  ExecutablePlan(ExecutablePlan&&) noexcept;
  ExecutablePlan& operator=(ExecutablePlan&&) noexcept;
  ~ExecutablePlan();

  /// Runs one inference. `inputs` in graph-input order (see MatchInputs), plain
  /// row-major with the compiled dims; returns the graph outputs in order, named.
  /// Throws Error(kUsage) when an input's type or dims differ from the compiled ones.
  /// With `step_ms`, also adds each step's wall-clock time in ms to
  /// (*step_ms)[i], i in Schedule() order (resized to it when smaller).
  std::vector<Tensor> Run(const std::vector<Tensor>& inputs, std::vector<double>* step_ms = nullptr);

  /// A graph input or output as the plan binds it: name, dims (compiled, plain
  /// row-major), ONNX element type (the buffer holds StorageTypeOf it: float32
  /// or int64). An output known at build time has `constant` (no buffer).
  struct Binding {
    std::string name;
    std::vector<std::int64_t> dims;
    std::int32_t data_type = 0;
    const Tensor* constant = nullptr;
  };
  std::vector<Binding> InputBindings() const;
  std::vector<Binding> OutputBindings() const;

  /// The buffer-level form of Run, for callers that fill inputs from their own
  /// memory (the session, src/session/): write input i's elements into
  /// InputBuffer(i) (StorageTypeOf(data_type), dims as bound), call RunSteps,
  /// read output i from OutputBuffer(i) (nullptr for a constant output). The
  /// buffers live in the activation arena: valid until the next run.
  void* InputBuffer(std::size_t i);
  const void* OutputBuffer(std::size_t i) const;
  /// Output i of the last run as an owned, named Tensor in its storage type
  /// (a copy of OutputBuffer(i), or of the constant); what Run returns.
  Tensor OutputTensor(std::size_t i) const;
  void RunSteps(std::vector<double>* step_ms = nullptr);

  const PlanStats& stats() const;
  /// The steps Run executes, in order.
  std::vector<ScheduleStep> Schedule() const;
  /// One line per step: "<kind> <node names> <implementation> <dst layout>".
  std::vector<std::string> Describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  explicit ExecutablePlan(std::unique_ptr<Impl> impl);
  static ExecutablePlan CompileInto(const Graph& graph, Graph* releasable, const FusionPlan& plan,
                                    const CompileOptions& options);
};

}  // namespace onnxfuse
