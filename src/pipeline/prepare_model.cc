// The front door (prepare_model.h): load, control flow, BN folding, function
// expansion, fusion, in that order, for every caller.
#include "pipeline/prepare_model.h"

#include <chrono>

#include "common/stopwatch.h"
#include "fuse/greedy_fuser.h"
#include "fuse/pattern_fuser.h"
#include "fuse/pattern_regions.h"
#include "fuse/postdom_fuser.h"
#include "pipeline/pipeline.h"

namespace onnxfuse {

FusionPlan FuseGraph(const Graph& graph, const FuseSettings& settings) {
  const std::vector<Pattern> loaded = settings.patterns ? std::vector<Pattern>{} : LoadPatterns(settings.pattern_dirs);
  const std::vector<Pattern>& patterns = settings.patterns ? *settings.patterns : loaded;
  if (settings.strategy == Strategy::kPattern) return FuseByPatterns(graph, patterns, settings.fuser);
  FusionPlan plan = settings.strategy == Strategy::kPostdom ? FuseByPostDominator(graph, settings.fuser)
                                                            : FuseGreedy(graph, settings.fuser);
  // The library recognizes the single-op decompositions in every strategy.
  AnnotatePatternRegions(graph, plan, patterns);
  return plan;
}

PreparedModel PrepareModel(const std::string& path, const PrepareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PreparedModel prepared = PrepareGraph(LoadModel(path, options.load), options);
  prepared.load_ms = MsSince(start) - prepared.fuse_ms;
  return prepared;
}

PreparedModel PrepareGraph(Graph graph, const PrepareOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const bool executable = options.target == Target::kExecutable;
  PreparedModel p;
  p.graph = std::make_unique<Graph>(std::move(graph));
  // An executable graph runs an If decided at run time as both branches and a
  // Where; a written model keeps the If, which other runtimes run one branch of.
  p.control_flow = InlineControlFlow(*p.graph, ControlFlowOptions{/*select_run_time_if=*/executable});
  if (executable && !options.keep_run_time_control_flow) RequireNoControlFlow(*p.graph, p.control_flow);
  // The QOperator format runs as the QDQ form it computes: one way for the
  // backend to run a static quantization.
  if (executable) p.qoperators = ExpressQOperatorsAsQdq(*p.graph);
  // Dynamic quantization's integer products run on float kernels.
  if (executable) p.integer_products = ExpressIntegerProductsAsFloat(*p.graph);
  if (options.fold_bn) p.bn_folding = FoldBatchNormIntoConv(*p.graph);
  // Function ops the backend has no lowering for run as their ONNX bodies; a
  // written model keeps them as the model wrote them.
  if (executable && options.lowers) p.functions = ExpandFunctionOps(*p.graph, options.lowers);
  p.load_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  if (options.fuse) {
    p.fusion = FuseGraph(*p.graph, options.fusion);
    ValidateFusionPlan(*p.graph, p.fusion);
  }
  p.fuse_ms = MsSince(start);
  return p;
}

}  // namespace onnxfuse
