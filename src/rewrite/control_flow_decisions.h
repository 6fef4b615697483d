// Whether and how one If, Loop or Scan node is expanded: the preconditions
// listed in inline_control_flow.h, checked on the node as the Graph (after
// shape inference) describes it, and the expansion built when they hold.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "rewrite/control_flow_unroll.h"
#include "rewrite/inline_control_flow.h"
#include "rewrite/subgraph_copy.h"

namespace onnxfuse {

/// An expansion, or the reason there is none.
struct ControlFlowDecision {
  std::optional<Expansion> expansion;
  std::string detail;  ///< what was done ("unrolled 3 iterations"), or why not ("node 'l' (Loop): ...")
  std::string reason;  ///< refusal code (inline_control_flow.h); "" for an expansion
  bool both_branches = false;  ///< an If decided at run time, expanded to both branches and a Where
};

/// Decides `node` (an If, Loop or Scan of the default domain) of `graph`; new
/// names come from `names`, prefixed with "<node name>/". A body that cannot be
/// copied (sparse initializers) is the refusal "unsupported_body". Throws
/// Error(kInvalidModel) for a node whose attributes, inputs and outputs
/// disagree with its body (a missing body, counts that do not match).
ControlFlowDecision DecideControlFlow(const Graph& graph, const Node& node, NameSource& names,
                                      const ControlFlowOptions& options);

/// The nested If/Loop/Scan bodies counted with their nodes: the size of one copy of `g`.
std::int64_t CountNodes(const onnx::GraphProto& g);

}  // namespace onnxfuse
