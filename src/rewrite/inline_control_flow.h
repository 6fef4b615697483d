// inline_control_flow: If, Loop and Scan nodes decided at build time become
// plain dataflow of the enclosing graph, so that fusion, the written model and
// `onnx-fuse run` see ordinary operators.
//
//   If    whose condition is known at build time (build_time_values.h: an
//         initializer, a Constant, or computed from them and static shapes)
//         is replaced by a copy of the chosen branch; decided at run time,
//         with ControlFlowOptions::select_run_time_if and outputs of static
//         shapes, by both branches and a Where per output;
//   Loop  whose trip count M is known, whose condition input is absent or
//         known, and whose body passes its condition through unchanged (the
//         body's cond output is its cond input, an Identity of it, or a
//         constant true: the count is then M, or 0 when the condition is
//         false) is unrolled, the iteration number a constant per copy;
//   Scan  whose scanned axes have a static length is unrolled (opset 8's
//         batched Scan too, item by item, when it has no sequence_lens).
// The checks per node: control_flow_decisions.h; semantics and the expansion:
// control_flow_unroll.h; copies of bodies (outer scope reads, fresh names,
// nested subgraphs): subgraph_copy.h. An expansion is
// bounded: at most kMaxIterations copies and kMaxUnrolledNodes nodes per node.
//
// Nested control flow is handled by rounds: each round expands the nodes of the
// top-level graph that can be, then the model is loaded again (onnx::checker,
// shape inference, topological order: LoadModelProto) so that the next round
// sees the bodies' If/Loop/Scan nodes at the top level, with the iteration
// numbers now constants. Rounds stop when nothing changes (at most kMaxRounds).
//
// What stays is refused, with a stable reason code:
//   "condition_not_constant"     an If's (or Loop's cond) condition is computed at run time
//                                (for an If: without select_run_time_if, or with it when
//                                computing both branches does not load at the graph's
//                                shapes: the branch never taken does not hold)
//   "shapes_not_static"          an If decided at run time whose outputs' shapes or types are
//                                not static, or whose condition is not one element
//   "no_trip_count"              a Loop without M (a while loop)
//   "trip_count_not_constant"    a Loop whose M is computed at run time
//   "condition_computed_in_body" a Loop body whose cond output is computed (it may stop early)
//   "too_many_iterations"        more than kMaxIterations copies
//   "too_large"                  more than kMaxUnrolledNodes nodes
//   "zero_iterations"            no iteration but scan outputs, whose shape would be unknown
//   "sequence_length_unknown"    a Scan input whose scanned dim (or rank) is not static
//   "rank_unknown"               a negative scan_output_axes entry and an output of unknown rank
//   "non_tensor"                 a body input or output is a sequence or optional, not a tensor
//   "sequence_lens"              an opset-8 Scan with a sequence_lens input
//   "unsupported_body"           a body with sparse initializers
//   "nested_too_deep"            still expandable after kMaxRounds rounds
// The refused nodes stay in the graph as they were (the fuse path writes them
// back; `run` calls RequireNoControlFlow).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

inline constexpr std::int64_t kMaxIterations = 1024;
inline constexpr std::int64_t kMaxUnrolledNodes = 16384;
inline constexpr int kMaxRounds = 16;

/// What the pass may do beyond expanding what is decided at build time.
struct ControlFlowOptions {
  /// An If decided at run time whose outputs have static shapes becomes both
  /// branches and a Where per output (control_flow_unroll.h, SelectBranches):
  /// for consumers that execute the graph (`run`, plan files), where it runs;
  /// the written model keeps the If, which other runtimes run one branch of.
  bool select_run_time_if = false;
};

/// One If/Loop/Scan replaced. Node names are those of the graph the round saw.
struct ControlFlowExpansion {
  std::string node;
  std::string op_type;
  std::string detail;  ///< "then_branch inlined", "unrolled 10 iterations"
};

/// One If/Loop/Scan that stays, and why.
struct ControlFlowRefusal {
  std::string node;
  std::string op_type;
  std::string reason;  ///< a code from the list above
  std::string detail;  ///< one sentence: "node 'loop' (Loop): its trip count 'n' is computed at run time"
};

struct ControlFlowResult {
  std::vector<ControlFlowExpansion> expanded;  ///< in the order done, round by round
  std::vector<ControlFlowRefusal> refused;     ///< the nodes left after the last round, in node order
};

/// True for an If, Loop or Scan of the default domain.
bool IsControlFlow(const Node& node);

/// Expands what it can of `graph` in place (replacing it with the reloaded
/// rewritten model; its conversion record is kept). Without If/Loop/Scan nodes
/// the graph is not touched. Throws Error(kInvalidModel) naming the node when
/// the rewritten model does not load because a body was invalid already
/// (subgraph_check.h), Error(kInternal) when it does not load otherwise (a bug
/// here), and what LoadModelProto throws otherwise.
ControlFlowResult InlineControlFlow(Graph& graph, const ControlFlowOptions& options = {});

/// For consumers that execute the graph: throws Error(kUnsupported)
/// "<graph's source path>: <the first refusal's detail>" when any If/Loop/Scan stayed.
void RequireNoControlFlow(const Graph& graph, const ControlFlowResult& result);

}  // namespace onnxfuse
