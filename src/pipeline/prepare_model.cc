// The front door (prepare_model.h): load, control flow, BN folding, function
// expansion, fusion, in that order, for every caller.
#include "pipeline/prepare_model.h"

#include <chrono>

#include "fuse/greedy_fuser.h"
#include "fuse/pattern_fuser.h"
#include "fuse/postdom_fuser.h"
#include "pipeline/pipeline.h"

namespace onnxfuse {

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

FusionPlan FuseGraph(const Graph& graph, const FuseSettings& settings) {
  switch (settings.strategy) {
    case Strategy::kPostdom:
      return FuseByPostDominator(graph, settings.fuser);
    case Strategy::kGreedy:
      return FuseGreedy(graph, settings.fuser);
    case Strategy::kPattern:
      break;
  }
  if (settings.patterns) return FuseByPatterns(graph, *settings.patterns, settings.fuser);
  return FuseByPatterns(graph, LoadPatterns(settings.pattern_dirs), settings.fuser);
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
  if (executable) RequireNoControlFlow(*p.graph, p.control_flow);
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
