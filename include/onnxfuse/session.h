// InferenceSession: a fused model as a library, shaped like ONNX Runtime's
// InferenceSession.
//
//   onnxfuse::SessionOptions options;
//   options.threads = 2;
//   onnxfuse::InferenceSession session("resnet18.onnx", options);
//   std::vector<float> image(1 * 3 * 224 * 224);
//   auto outputs = session.Run({{"input", {onnxfuse::ElementType::kFloat, {1, 3, 224, 224}, image.data()}}});
//   // outputs[0].dims == {1, 1000}, outputs[0].data: the logits
//
// Loading: a .onnx model is prepared (loaded, control flow decided at build
// time inlined, function ops the backend does not lower expanded, fused with
// options.strategy) and compiled exactly as `onnx-fuse run --strategy S
// [--input-shape ...]` does, through the same function; a .plan file
// (`onnx-fuse model.onnx -o model.plan`) is replayed with its stored groups and
// prepacked weights.
//
// Shapes: the model is prepared and fused once, in the constructor, with its
// symbolic dims; each distinct signature of input shapes then gets its own
// compiled schedule, made on first use from that prepared graph with the
// call's dims pinned and ONNX shape inference run again (no parsing, checks,
// opset conversion or fusion), and the same groups compiled for those
// shapes. Fusion on the symbolic graph matches fusion at pinned dims: two
// dims are equal when they are the same number or the same symbol (ONNX IR:
// one dim_param names one value throughout a model). A model whose
// preparation needs its dims pinned (an If on a dim) is prepared again at
// each shape with them pinned (LoadOptions::input_shapes), as `run
// --input-shape` does (SessionStats::fused_once false). A plan file (format
// version 3) keeps its model's symbolic dims and makes schedules from its
// stored model and groups the same way; its constructor replays the schedule
// stored for the shapes it was built at (a symbolic dim as 1). Schedules are
// kept in an LRU cache of SessionOptions::shape_cache_size entries. A model
// whose inputs are all fixed (declared, or by SessionOptions::input_shapes)
// is compiled in the constructor. A plan file of format version 2 runs at the
// one shape it was built at: another is Error(kUsage).
//
// Shapes that follow values: where a shape depends on the elements of an
// input (NonZero, NonMaxSuppression, a Reshape, TopK or Range of a computed
// size, an If or Loop decided at run time: detectors), no one schedule serves
// the model, and each Run goes in stages (src/session/staged_model.h): the
// nodes whose shapes are known from what the run has computed so far are
// compiled and fused as a stage at those shapes (cached), and the nodes
// between stages are evaluated one by one (an If as the branch its condition
// picks, a Loop as its body per iteration). SessionStats::staged_runs counts
// such Runs; PlanStatsFor has no schedule for them (Error(kUsage)).
//
// Batches in passes: when the model computes each sample of its leading
// symbolic dim on its own (src/session/batch_passes.h proves it from the
// graph), a batch whose largest step would outgrow half the L3 cache gets a
// schedule compiled for a divisor of the batch and runs as batch / c passes
// of it over slices of the inputs, writing slices of the outputs: the same
// values as one pass, without streaming every step through DRAM
// (SessionOptions::max_samples_per_pass; CachedShape::samples_per_pass).
// With SessionOptions::threads = T > 1 and a batch T divides, T passes run at
// once, each on one thread (helper threads of the call) with an instance of
// its own and 1/T of the cache budget, instead of every step being split
// across the team (CachedShape::concurrent_passes).
//
// Threads: Run may be called from several threads at once. Each concurrent
// call runs on its own instance of the shape's compiled schedule (its own
// activation arena and scratchpad), taken from a pool that grows to the
// largest number of simultaneous calls at that shape; prepacked weights
// (convolution and matmul operands, a plan file's stored ones included) are
// shared by all instances and schedules. SessionOptions::threads is the
// OpenMP team size each call runs with (set with omp_set_num_threads on the
// calling thread, which keeps it). The model's weights are held once, by the
// prepared graph (a plan file's: its model as stored), which the graph of
// every cached shape borrows them from.
//
// Errors: every failure is an onnxfuse::Error (error.h) whose kind() is the
// one `onnx-fuse` maps to an exit code: kIo / kInvalidModel / kUnsupported
// from loading and compiling, kUsage for a bad option or call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxfuse/plan_stats.h"
#include "onnxfuse/strategy.h"
#include "onnxfuse/tensor.h"
#include "onnxfuse/tensor_view.h"

namespace onnxfuse {

struct SessionOptions {
  /// OpenMP threads per Run; 0 = the OpenMP default (all cores or OMP_NUM_THREADS).
  int threads = 0;
  /// Fuser for .onnx models (strategy.h; ParseStrategy reads a name). Ignored
  /// for plan files (they hold their groups).
  Strategy strategy = kDefaultStrategy;
  /// Extra pattern directories for strategy "pattern", after the built-in library.
  std::vector<std::string> pattern_dirs;
  /// Input name -> full shape, pinned at load (as `run --input-shape`); a
  /// symbolic dim pinned here takes that value everywhere. For a plan file:
  /// format version 3, or the shapes a version 2 plan was built at.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// Compiled schedules kept (one per input-shape signature), least recently
  /// used evicted first; >= 1.
  int shape_cache_size = 8;
  /// A model that computes each sample of its leading symbolic dim on its own
  /// (src/session/batch_passes.h) runs a large batch as passes of a schedule
  /// compiled for fewer samples, so that each step's tensors stay in the
  /// cache: at most this many samples per pass; 0 = chosen from the L3 size
  /// (half of it over the bytes per sample of the largest step, and at least
  /// as many samples as threads); -1 = never.
  int max_samples_per_pass = 0;
};

/// A graph input or output: its name, element type and shape. dims[i] is -1
/// where the dim is not fixed, and symbols[i] names it ("batch") when the model
/// does ("" for a fixed or anonymous dim). has_shape false: rank unknown.
struct ValueInfo {
  std::string name;
  ElementType type = ElementType::kUndefined;
  bool has_shape = true;
  std::vector<std::int64_t> dims;
  std::vector<std::string> symbols;
};

/// One schedule in the shape cache.
struct CachedShape {
  /// Its signature: every graph input's shape, by name.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// Wall-clock ms spent making it before compiling: inferring the prepared
  /// model's shapes at these input shapes and applying its groups
  /// (SessionStats::fused_once), or else loading and fusing the model with
  /// these shapes pinned. The constructor's schedule of a fixed-shape model
  /// or a plan file: the whole load.
  double load_ms = 0;
  /// Wall-clock ms compiling its first instance at these shapes (lowering,
  /// oneDNN primitive creation, weight packing): plan.compile_ms.
  double compile_ms = 0;
  PlanStats plan;  ///< its compiled schedule's statistics (per pass when split)
  /// Samples per pass when this shape runs as several passes of a schedule
  /// for fewer samples (SessionOptions::max_samples_per_pass); 0: one pass.
  std::int64_t samples_per_pass = 0;
  /// Passes that run at once, each on one thread with an instance of its own
  /// (a team of SessionOptions::threads > 1 and a batch it divides); 1: one
  /// after another on the call's team.
  int concurrent_passes = 1;
};

/// How the shape cache has been used (cumulative since construction).
struct SessionStats {
  int compiles = 0;         ///< schedules made (cache misses, the constructor's included)
  int cache_hits = 0;       ///< Runs whose shapes had a cached schedule
  int evictions = 0;        ///< schedules dropped by the LRU
  int cached_shapes = 0;    ///< schedules held now
  int plan_instances = 0;   ///< instances over all cached schedules (>1 at a shape: concurrent Runs)
  /// True when the model was prepared (loaded, rewritten, fused) once, with
  /// its symbolic dims, so that a new input shape costs only inferring the
  /// shapes again (CachedShape::load_ms) and compiling (compile_ms). False
  /// for a model whose preparation needs its dims pinned (an If or a rewrite
  /// that needs a shape the symbolic graph leaves open: logged once, at
  /// info level), prepared again at each new shape, and for a version 2 plan file.
  bool fused_once = false;
  /// Runs made in stages because, at their input shapes, some shapes follow
  /// the values of tensors (NonZero, NonMaxSuppression, a TopK or Reshape of
  /// a computed size, an If or Loop decided at run time): each stage is
  /// compiled at the shapes its inputs have, and the nodes between stages
  /// are evaluated one by one (src/session/staged_model.h).
  int staged_runs = 0;
  int stages_compiled = 0;  ///< stages made for them (cache misses)
  int stage_hits = 0;       ///< stages found in the stage cache
  int nodes_evaluated = 0;  ///< nodes evaluated one by one between stages (host, If, Loop)
  std::vector<CachedShape> shapes;  ///< the cached schedules, most recently used first
};

/// Named inputs of Run: graph input name -> view over caller memory.
using NamedInputs = std::map<std::string, TensorView>;

class InferenceSession {
 public:
  /// Loads `path`: a plan file (by its magic bytes) or an ONNX model. Throws
  /// Error: the loader's and compiler's errors (kIo, kInvalidModel,
  /// kUnsupported naming the node); kUsage for a
  /// shape_cache_size < 1, threads < 0, max_samples_per_pass < -1,
  /// input_shapes naming no graph input or
  /// changing a fixed dim (any dim of a version 2 plan file).
  /// Process-wide effect: bounds oneDNN's primitive cache to 128 primitives
  /// (from oneDNN's default 1,024) unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is
  /// set; a session's schedules hold their own primitives (docs/api.md, Shapes).
  explicit InferenceSession(const std::string& path, const SessionOptions& options = {});
  ~InferenceSession();
  InferenceSession(InferenceSession&&) noexcept;
  InferenceSession& operator=(InferenceSession&&) noexcept;
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  /// The graph inputs (initializers excluded) and outputs, in model order,
  /// with the shapes the model declares (after SessionOptions::input_shapes).
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;

  /// Runs one inference. `inputs` must name every graph input once; each view's
  /// dtype must be the input's element type and its shape must have the input's
  /// rank and fixed dims (a symbolic dim takes any value >= 0, equal wherever
  /// its symbol recurs). Returns the outputs named in `output_names` in that
  /// order (all, in model order, when empty) as owned tensors: float32,
  /// float16 and float64 outputs as float32 in Tensor::data, integer and bool
  /// outputs as int64 in Tensor::int_data, Tensor::data_type the ONNX type.
  /// Throws Error(kUsage) naming the input or output for an unknown or missing
  /// name, a wrong dtype, rank or dim, and for a new shape of a version 2 plan
  /// file; the compiler's errors on a new shape.
  std::vector<Tensor> Run(const NamedInputs& inputs, const std::vector<std::string>& output_names = {});

  /// Runs one inference and writes the named outputs into caller memory: each
  /// view's dtype must be the output's element type and its shape the shape
  /// this run computes (outputs not named are computed and dropped). Throws as
  /// the other Run, and Error(kUsage) naming the output for a wrong name, dtype
  /// or shape (nothing is written then).
  void Run(const NamedInputs& inputs, const std::map<std::string, MutableTensorView>& outputs);

  /// The compiled schedule's statistics at these input shapes (all inputs,
  /// by name), compiling it when not cached: kernels, arena, weights. When
  /// the shapes run as several passes (SessionOptions::max_samples_per_pass),
  /// those of the schedule one pass runs: stats().shapes gives its samples.
  PlanStats PlanStatsFor(const std::map<std::string, std::vector<std::int64_t>>& input_shapes);

  SessionStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnxfuse
