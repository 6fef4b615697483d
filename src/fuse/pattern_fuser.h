// The pattern strategy (`--strategy pattern`): declarative patterns first, by
// priority, then the post-dominator fuser on what is left.
//
// Source: TVM's backend flow (FuseOpsByPattern, then FuseOps, where the
// composite functions made by patterns are opaque to FuseOps); MLIR's
// PatternRewriter for ordering by benefit. Patterns are tried in order of
// benefit (higher first), then body size (larger first), then name; each is
// anchored at every node, in topological order, whose op type is the
// pattern's last op and that no earlier match claimed. A match becomes a group
// written as a call of the pattern's own function (PatternCall); a near-miss
// (the anchor matched, something further did not) is recorded with its reason.
#pragma once

#include <vector>

#include "fuse/fusion_plan.h"
#include "patterns/pattern.h"

namespace onnxfuse {

/// Partitions `graph`: pattern groups get rule "pattern:<name>" and a
/// PatternCall; the remaining nodes are partitioned by FuseByPostDominator with
/// pattern-claimed nodes treated as kOpaque. plan.functions holds each matched
/// pattern's FunctionProto once; plan.pattern_outcomes has every pattern's
/// matches and near-misses (not listed, as not informative: near-misses at
/// anchors a later match of the same pattern fused, op or input mismatches at
/// the anchor itself or op mismatches at its immediate producer). Returns a
/// validated plan with strategy "pattern".
FusionPlan FuseByPatterns(const Graph& graph, const std::vector<Pattern>& patterns, const FuserOptions& options);

/// The order FuseByPatterns tries patterns in (indices into `patterns`).
std::vector<std::size_t> PatternPriorityOrder(const std::vector<Pattern>& patterns);

}  // namespace onnxfuse
