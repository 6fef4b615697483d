// A model whose shapes follow values, run in stages.
//
// Where an output's shape depends on the values of a tensor (NonZero,
// NonMaxSuppression, a TopK whose K is computed, a Reshape, Expand, Range or
// ConstantOfShape of a computed shape, an If whose condition is known only
// when it runs, a Loop with a run-time trip count or condition, a Scan over a
// length that follows values), one schedule
// cannot be compiled for the whole model. A run then goes in stages:
//   1. the ready nodes (stage_split.h) are compiled as a stage of their own,
//      at the shapes the values it reads actually have, fused by the
//      session's strategy, or found in a cache of stages (keyed by StageKey:
//      the nodes done, the values' shapes, and the elements of the small
//      values read as shapes), and run;
//   2. the nodes left whose inputs are now all known and whose outputs follow
//      values (or that the model was made to evaluate: host_nodes) are
//      evaluated one by one: NonZero, NonMaxSuppression, Compress
//      and Unique on the host evaluator (eval/host_eval.h), as is a node that
//      reads an empty tensor (no detection; compiled kernels refuse them); an If by running
//      the branch its condition picks; a Loop by running its body once per
//      iteration; a Scan by running its body once per slice of its scan
//      inputs (staged_control_flow.cc). Branches and bodies are models of their own, prepared once
//      and run in stages the same way;
//   3. again from 1 until every output of the model is known.
// A model without such nodes is one stage: its one schedule per input shape
// (the session's usual path). This is how ONNX Runtime runs such models, one
// node at a time with the shapes it finds, except that what can be compiled
// together is, and fused.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "load/shape_model.h"
#include "onnxfuse/tensor.h"
#include "pipeline/prepare_model.h"
#include "session/shape_schedule.h"
#include "session/stage_split.h"

namespace onnxfuse::session {

/// What a staged model did, summed over its runs (nested branches and bodies included).
struct StagedStats {
  int stages_compiled = 0;  ///< stages made (a cache miss)
  int stage_hits = 0;       ///< stages found in the cache
  int stages_run = 0;
  int nodes_evaluated = 0;  ///< nodes evaluated one by one (host, If, Loop)
  double compile_ms = 0;    ///< wall-clock ms making stages (inference, fusion, compile)
};

class StagedModel {
 public:
  /// `prepared`: the model prepared for an executable target with its
  /// run-time control flow kept (PrepareOptions::keep_run_time_control_flow);
  /// `prepare`: those options, for its branches and bodies (loaded and
  /// prepared the same way; prepare.fusion fuses each stage, unless `fuse`
  /// is false); `cache_size`: stages kept (LRU). Stages of the same nodes at
  /// other shapes share their prepacked weights. `host_nodes` (one entry per
  /// node, or empty): nodes always evaluated one by one, never compiled
  /// (NodesFollowingChangedDims: a KV cache's attention), so that the stages
  /// between them are found in the cache whatever the cache's length.
  StagedModel(std::shared_ptr<const Graph> prepared, PrepareOptions prepare, bool fuse, std::size_t cache_size,
              std::vector<bool> host_nodes = {});
  ~StagedModel();

  /// Runs the model. `inputs`: every graph input by name, in its storage
  /// type (tensor_io.h); taken over (a caller that keeps them passes a copy).
  /// Returns the graph outputs in order, named. Thread-safe.
  /// Throws Error: kUsage for a missing input; kUnsupported naming the node
  /// that neither a stage nor the evaluator can run; what compiling a stage
  /// throws; kInvalidModel for values the model's ops refuse (an If condition
  /// that is not one element, a Loop body output of the wrong count).
  std::vector<Tensor> Run(KnownValues inputs);

  StagedStats stats() const;
  const Graph& prepared() const { return shapes_.prepared(); }

 private:
  struct CachedStage;
  std::shared_ptr<CachedStage> StageFor(const std::vector<bool>& done, const KnownValues& known);
  void RunStage(const CachedStage& stage, std::vector<bool>& done, KnownValues& known);
  /// Evaluates the remaining nodes whose inputs are known and whose outputs
  /// follow values (or, with `any`, the first remaining node the host
  /// evaluator knows). Returns whether it evaluated one.
  bool EvaluateKnown(std::vector<bool>& done, KnownValues& known, bool any);
  std::vector<Tensor> EvaluateNode(NodeId id, const KnownValues& known);
  /// Records node `id`'s `outputs` in `known` and marks it done.
  void Evaluated(NodeId id, std::vector<Tensor> outputs, std::vector<bool>& done, KnownValues& known);
  // If, Loop and Scan: their subgraphs run as staged models of their own
  // (staged_control_flow.cc), `inputs` the node's explicit inputs.
  std::vector<Tensor> RunIf(NodeId id, const std::vector<const Tensor*>& inputs, const KnownValues& known);
  std::vector<Tensor> RunLoop(NodeId id, const std::vector<const Tensor*>& inputs, const KnownValues& known);
  std::vector<Tensor> RunScan(NodeId id, const std::vector<const Tensor*>& inputs, const KnownValues& known);
  /// The nested model of `node`'s subgraph attribute `attribute`, made once
  /// (a captured value of unknown rank takes the rank it has in `known`).
  StagedModel& Body(NodeId id, const std::string& attribute, const KnownValues& known);
  /// The values a branch or body (`body`, made by Body) reads from outside,
  /// its inputs from `first` on: from `known`, or the prepared graph's initializers.
  KnownValues OuterValues(const Graph& body, std::size_t first, const KnownValues& known) const;
  /// Input `slot` of `node`, from `known` or the prepared graph's constants (nullptr when omitted).
  const Tensor* InputOf(const Node& node, std::size_t slot, const KnownValues& known, std::vector<Tensor>& held) const;

  ShapeModel shapes_;  // the prepared graph, and what infers its shapes at the ones a stage has
  PrepareOptions prepare_;
  bool fuse_;
  std::size_t cache_size_;
  std::vector<bool> host_nodes_;
  // Per node, decided once: evaluated on the host whenever its inputs are
  // known (its outputs' shapes follow values, or it is one of host_nodes_);
  // and whether the host evaluator runs it at all.
  std::vector<bool> evaluated_always_, host_evaluable_;

  mutable std::mutex mutex_;  // guards the members below
  std::list<std::pair<std::string, std::shared_ptr<CachedStage>>> stages_;  // most recent first
  std::map<std::string, std::unique_ptr<StagedModel>> bodies_;  // "<node id>/<attribute>"
  // What the stages of the same nodes at other shapes share (by their node
  // ids): their prepacked constants (Builder keys them by node index, the same
  // in each), and the implementation the first one timed for each step, so
  // that a new count of boxes does not time its candidates again.
  struct SameNodes {
    SharedPackedConstants packed;
    std::map<std::string, std::string> implementations;
  };
  std::map<std::string, std::unique_ptr<SameNodes>> same_nodes_;
  StagedStats stats_;
};

}  // namespace onnxfuse::session
