// The greedy residual-aware fuser (`--strategy greedy`).
//
// Source: shared/seeds/004 (greedy sequential fusion with residual awareness).
// Walks nodes in topological order; from each node not yet in a group it
// extends a chain through single consumers until a boundary: a fork (an output
// read by several nodes or by the graph), a join (a node with several
// non-constant inputs), a significant shape change (FuserOptions::greedy_shape_ratio),
// an opaque op, or the group-size limit. Chains are convex by construction.
#pragma once

#include "onnxfuse/fusion_plan.h"

namespace onnxfuse {

/// Partitions `graph` into chains. Groups get rule "greedy.chain"; rejections
/// record each chain end: "fork", "join", "shape_change", "opaque", "graph_output",
/// "group_size_limit".
FusionPlan FuseGreedy(const Graph& graph, const FuserOptions& options);

}  // namespace onnxfuse
