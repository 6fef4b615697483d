// The post-dominator fuser (`--strategy postdom`): TVM's GraphPartitioner.
//
// Source: TVM src/relay/analysis/graph_partitioner.{h,cc} (GraphPartitioner::
// RunFuse, CheckPath, CommitFuse, MergeFromTo); the design is in shared/seeds/000
// (TVM fusion architecture) and 001 (FuseOps walk-through).
//
// Groups are a union-find over nodes (path compression; a merge always goes
// into the post-dominator's group). A group records its pattern, its anchor
// (the one kOutEWiseFusable member), its node count and the phase of its first
// merge. As in TVM, a group's pattern is its root node's kind, raised to
// kOutEWiseFusable when an anchor is merged in; absorbing elementwise or
// injective members does not change it. Three phases visit the nodes in
// topological order; each node may fuse into the group of its immediate
// post-dominator P (post_dominator_tree.h) when:
//   - its kind is not kOpaque, it has a P, P is not a tuple, and it is not
//     already in P's group;
//   - kOutEWiseFusable (phase 0 only): the tree edge to P is kElemWise and every
//     group on the paths to P, P's included, is at most kBroadcast;
//   - kElemWise/kBroadcast (every phase): the tree edge is at most kInjective or
//     is kCommReduce, groups strictly between are at most kInjective, and P's
//     group is anything but kTuple/kOpaque (so it may be a conv's group);
//   - kInjective/kTuple (phase 1 only): every group on the paths is at most kInjective;
//   - phase 2: an injective op whose P is a tuple already absorbed by an
//     injective group joins it when every group on the paths is at most kInjective;
//   - the merged group has at most FuserOptions::max_group_size nodes and, when
//     max_group_args > 0, at most that many distinct external input values
//     (initializers included). A fusion over the argument limit is postponed to
//     the end of the phase and retried once.
// CheckPath tests the root group of every node on every path from the node to
// P; CommitFuse merges all of them into P's group. Two kOutEWiseFusable ops
// never share a group (the merge checks it).
//
// Complexity: building the tree is O(E + LCA walks); each CheckPath/CommitFuse
// walks only the nodes between a node and its post-dominator; the union-find
// is near-constant per operation. Chains, residual ladders and diamonds are
// near-linear in N. All walks are iterative (no recursion).
#pragma once

#include "fuse/fusion_plan.h"

namespace onnxfuse {

/// Partitions `graph` and returns a validated plan (ValidateFusionPlan).
///
/// Rules on groups: "postdom.phase0", "postdom.phase1", "postdom.phase2" (the
/// phase of the group's first merge; "" for single nodes; a phase-2 merge only
/// extends a group formed earlier, so "postdom.phase2" is not expected). Every node that ends
/// without joining its post-dominator's group gets exactly one Rejection (its
/// final outcome), `target` = the post-dominator when there is one. Reasons:
///   "opaque"                      the op is kOpaque
///   "graph_output"                an output is a graph output (no post-dominator)
///   "no_post_dominator"           no consumers, or branches that never meet again
///   "post_dominator_is_tuple"     TVM does not fuse into a tuple (phase 2 may, later)
///   "reduction_is_sink"           a reduction only ends groups
///   "dominator_edge_not_elemwise" kOutEWiseFusable: the tree edge to P is not kElemWise
///   "dominator_edge_not_fusable"  elementwise/broadcast: the tree edge is above kInjective
///   "path_not_fusable"            CheckPath failed; the detail names the node and its group's kind
///   "two_out_ewise_fusable"       the group on the path (P's) already has an anchor
///   "group_size_limit"            the merged group would exceed max_group_size
///   "argument_limit"              the merged group would exceed max_group_args (after the retry)
FusionPlan FuseByPostDominator(const Graph& graph, const FuserOptions& options);

/// The same with the kinds given instead of classified: the pattern strategy
/// marks nodes already fused by a pattern kOpaque, so they stay where they are
/// (TVM's flow, where composite functions are opaque to FuseOps).
FusionPlan FuseByPostDominator(const Graph& graph, const FuserOptions& options,
                               const std::vector<OpPatternKind>& kinds);

}  // namespace onnxfuse
