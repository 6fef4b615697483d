// `--explain NODE`: why one node ended where it did, as text for a person.
#pragma once

#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse {

/// Explains node `node_name`: its op and kind, its group (members, function,
/// rule), every rejection naming it (as the node that stopped or as the
/// target), and every pattern near-miss anchored at it or failing at it.
/// Throws Error(kUsage) when the graph has no node of that name.
std::string ExplainNode(const Graph& graph, const std::vector<OpPatternKind>& kinds, const FusionPlan& plan,
                        const std::vector<std::string>& function_of_group, const std::string& node_name);

}  // namespace onnxfuse
