// The post-dominator fuser (`--strategy postdom`): TVM's GraphPartitioner.
//
// Source: TVM src/relay/analysis/graph_partitioner.{h,cc}; the design is in
// shared/seeds/000 (TVM fusion architecture) and 001 (FuseOps walk-through).
// Union-find groups; three phases over nodes in topological order; each node
// may fuse into its immediate post-dominator's group when CheckPath accepts
// every path between them, and CommitFuse then merges every node on those
// paths. Phase 0 fuses kOutEWiseFusable ops (conv, gemm) with their
// elementwise epilogues; phase 1 fuses injective ops; phase 2 fuses injective
// ops into tuples. Elementwise/broadcast ops fuse in every phase.
#pragma once

#include "onnxfuse/fusion_plan.h"

namespace onnxfuse {

/// Partitions `graph`. Rules recorded on groups: "postdom.phase0", "postdom.phase1",
/// "postdom.phase2" (the phase of the first merge). Rejections record every node
/// that did not join its post-dominator, with reasons such as "opaque",
/// "no_post_dominator", "graph_output", "two_out_ewise_fusable", "path_not_fusable",
/// "dominator_edge_not_elemwise", "group_size_limit", "argument_limit".
FusionPlan FuseByPostDominator(const Graph& graph, const FuserOptions& options);

}  // namespace onnxfuse
