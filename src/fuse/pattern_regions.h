// Pattern regions: the library's matcher run over a plan that the postdom or
// greedy fuser partitioned, so that the decompositions of single ops (Gelu,
// LayerNormalization, squeeze-and-excitation) are recognized by the pattern
// library in every strategy, and the backend lowers them by name
// (backend/lower/fused/pattern_lowerings.h) as it lowers a pattern group.
//
// The partition is left as the fuser made it: a region only names nodes, which
// may lie in several groups (a Gelu's Div often ends one postdom group and its
// Erf starts the next); the backend absorbs them into one kernel wherever they
// are, lowering the region when it reaches the region's entry node.
#pragma once

#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "patterns/pattern.h"

namespace onnxfuse {

/// The library patterns recorded as regions: those standing for one op that
/// the backend runs as one kernel of its own, sorted.
const std::vector<std::string>& RegionPatternNames();

/// Matches the patterns of `patterns` named by RegionPatternNames over the
/// whole graph, as FuseByPatterns does (by PatternPriorityOrder, anchored at
/// every node in topological order, a node in at most one match; nodes of
/// groups a pattern fused, FusedGroup::pattern_name, never match), and records
/// each match on the group of its first node (FusedGroup::regions), replacing
/// what was there. Patterns of other names are ignored; a name missing from
/// `patterns` is simply not found.
void AnnotatePatternRegions(const Graph& graph, FusionPlan& plan, const std::vector<Pattern>& patterns);

}  // namespace onnxfuse
