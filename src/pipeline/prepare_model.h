// The one front door into the pipeline: a model prepared for its target. The
// fuse path (RunFuseJob, python `fuse`), `onnx-fuse run`, plan files and
// InferenceSession all come through here, so they agree on what a model is.
//
// Steps, in order:
//   1. load      LoadModel(path, options.load): checks, opset conversion, shape
//                inference, pinned input shapes (load/loader.h);
//   2. control   InlineControlFlow (rewrite/inline_control_flow.h): If, Loop and
//      flow      Scan decided at build time become dataflow. For an executable
//                target also an If decided at run time (both branches and a
//                Where), and whatever stays is an error (RequireNoControlFlow)
//                unless options.keep_run_time_control_flow;
//                an ONNX target keeps it in the written model;
//      QOperator executable target only: QLinearConv, QLinearMatMul and ONNX
//                Runtime's quantized com.microsoft ops as their QDQ form
//                (rewrite/qoperator_as_qdq.h, contrib_qoperators.h), and
//                MatMulInteger/ConvInteger cast to float as float products
//                (rewrite/integer_products_as_float.h; the backend runs the
//                DynamicQuantizeLinear before them as one step,
//                backend/lower/fused/dynamic_quantize.h);
//   3. fold BN   FoldBatchNormIntoConv, when options.fold_bn;
//   4. functions executable target only: ExpandFunctionOps with the backend's
//                options.lowers (rewrite/expand_functions.h); an ONNX target
//                keeps function ops as the model wrote them;
//   5. fuse      options.strategy (include/onnxfuse/strategy.h) with
//                options.fuser, when options.fuse.
// The core pipeline builds without oneDNN: the backend's knowledge (which ops
// it lowers) comes in as options.lowers, never by a dependency on it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "load/loader.h"
#include "patterns/pattern.h"
#include "onnxfuse/strategy.h"
#include "rewrite/expand_functions.h"
#include "rewrite/fold_batchnorm.h"
#include "rewrite/inline_control_flow.h"
#include "rewrite/integer_products_as_float.h"
#include "rewrite/qoperator_as_qdq.h"

namespace onnxfuse {

/// What the prepared graph is for.
enum class Target {
  kOnnx,        ///< a written ONNX model (the fuse path's .onnx output)
  kExecutable,  ///< the backend executes it: `run`, plan files, InferenceSession
};

/// How a fused graph is partitioned: the fuse step on its own, for a caller
/// that fuses a prepared graph again (a plan file at its built shapes).
struct FuseSettings {
  Strategy strategy = kDefaultStrategy;
  FuserOptions fuser;
  /// The library, once loaded by a caller that prepares many times (the
  /// session, per input shape); null: LoadPatterns(pattern_dirs). Strategy
  /// kPattern partitions by it; postdom and greedy record its pattern regions
  /// (fuse/pattern_regions.h).
  std::shared_ptr<const std::vector<Pattern>> patterns;
  /// Without `patterns`: directories after the built-in library.
  std::vector<std::string> pattern_dirs;
};

struct PrepareOptions {
  Target target = Target::kOnnx;
  LoadOptions load;
  bool fold_bn = false;  ///< fold inference BatchNormalization into the preceding Conv/ConvTranspose
  bool fuse = true;      ///< false: no fusion plan (an unfused baseline: `run --no-fuse`)
  /// Executable target: an If/Loop/Scan decided only at run time stays in
  /// the graph instead of being an error, for a runner that evaluates it
  /// between stages (session/staged_model.h).
  bool keep_run_time_control_flow = false;
  FuseSettings fusion;
  /// Executable target: the backend's LowersOp (backend/lower/core/lowered_ops.h),
  /// the function ops it keeps. Empty: nothing is expanded (a build without
  /// the backend has nothing to execute the graph with).
  LoweredOp lowers;
};

struct PreparedModel {
  std::unique_ptr<Graph> graph;  ///< the graph as rewritten (never null)
  FusionPlan fusion;             ///< its groups; empty when !options.fuse
  ControlFlowResult control_flow;
  std::optional<FoldResult> bn_folding;  ///< set when options.fold_bn
  FunctionExpansion functions;           ///< executable target: the function ops expanded and kept
  QOperatorRewrite qoperators;           ///< executable target: QOperators (QLinearConv, com.microsoft's) written as QDQ
  IntegerProductsRewrite integer_products;  ///< executable target: MatMulInteger/ConvInteger then Cast, as float
  double load_ms = 0;  ///< wall-clock ms of steps 1-4
  double fuse_ms = 0;  ///< wall-clock ms of step 5
};

/// Steps 1-5 on the model at `path`. Throws Error: the loader's (kIo,
/// kInvalidModel, kUnsupported); InlineControlFlow's; kUnsupported naming the
/// node for an executable target whose If/Loop/Scan stays
/// (RequireNoControlFlow); ExpandFunctionOps'; for strategy kPattern what
/// LoadPatterns throws (kIo for a missing directory, kInvalidModel for a bad
/// pattern file).
PreparedModel PrepareModel(const std::string& path, const PrepareOptions& options);

/// Steps 2-5 on `graph`, already loaded with options.load (step 1): for a
/// caller that reads the model's declared inputs before deciding to prepare
/// it (InferenceSession) or builds the model in memory. Throws as PrepareModel.
PreparedModel PrepareGraph(Graph graph, const PrepareOptions& options);

struct FuseJob;

/// The fuse settings of `job` (pipeline/pipeline.h): its strategy, fuser
/// options and pattern directories.
FuseSettings FuseSettingsOf(const FuseJob& job);

/// Step 5 alone: `graph` partitioned by settings.strategy; a postdom or greedy
/// plan carries the library's pattern regions (AnnotatePatternRegions). Throws
/// what LoadPatterns throws (without settings.patterns).
FusionPlan FuseGraph(const Graph& graph, const FuseSettings& settings);

}  // namespace onnxfuse
