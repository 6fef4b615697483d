// FusionPlan: what every fuser produces and every writer consumes. Plain data.
//
// A plan partitions the graph's nodes into groups (singletons included) and
// records, for every place that did not fuse, the reason (MLIR's
// notifyMatchFailure idea): those reasons are the report's "why not fused".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "classify/op_pattern_kind.h"

namespace onnxfuse {

/// Limits shared by the fusers.
struct FuserOptions {
  int max_group_size = 256;  ///< most nodes in one group (TVM's max_fuse_depth)
  int max_group_args = 0;    ///< most distinct external inputs of one group; 0 = no limit (TVM's max_function_args)
  /// Greedy fuser: an op whose output has at least this many times more or fewer
  /// elements than its input ends the chain ("significant shape change").
  double greedy_shape_ratio = 4.0;
};

/// A group written as a call of a given function (a pattern from patterns/)
/// instead of a function generated from its members.
struct PatternCall {
  std::string function;                          ///< name of a FunctionProto in FusionPlan::functions
  std::vector<ValueId> inputs;                   ///< graph value per function input; kNoValue = omitted
  std::vector<ValueId> outputs;                  ///< graph value per function output
  std::vector<onnx::AttributeProto> attributes;  ///< the call node's attributes
};

/// A match of a library pattern inside a plan no pattern partitioned (the
/// postdom and greedy strategies): the decomposition of one op (Gelu,
/// LayerNormalization, squeeze-and-excitation) that the backend lowers by the
/// pattern's name whatever groups hold its nodes (AnnotatePatternRegions,
/// fuse/pattern_regions.h).
struct PatternRegion {
  std::string pattern;        ///< the pattern's function name, e.g. "Gelu"
  std::vector<NodeId> nodes;  ///< graph node per computing body node, in body order (PatternMatch::nodes)
};

struct FusedGroup {
  int id = 0;                     ///< index in FusionPlan::groups
  std::vector<NodeId> nodes;      ///< members in topological order
  OpPatternKind pattern = OpPatternKind::kOpaque;  ///< combined (max) kind of the members
  NodeId anchor = kNoNode;        ///< the member of kind kOutEWiseFusable, if any (TVM's anchor_ref)
  std::string rule;               ///< what fused it, e.g. "postdom.phase0"; "" for a single node
  std::optional<PatternCall> call;  ///< set when a pattern defines the group's function
  /// The library pattern that fused the group (its function's name, e.g.
  /// "Gelu"), "" when none did. The backend lowers such a group by this name
  /// (backend/lower/fused/pattern_lowerings.h) and labels its steps with it; unlike
  /// `call`, a plan file keeps it.
  std::string pattern_name;
  /// The pattern regions whose first node is a member (postdom and greedy
  /// plans; a region's later nodes may lie in later groups). A plan file keeps them.
  std::vector<PatternRegion> regions;
};

/// One place where fusion did not happen.
struct Rejection {
  NodeId node = kNoNode;          ///< the node that was not fused further
  NodeId target = kNoNode;        ///< where it would have gone (post-dominator, successor), if any
  std::string reason;             ///< stable code: "opaque", "fork", "join", "graph_output", ...
  std::string detail;             ///< one human sentence naming the nodes involved
};

/// What one pattern did in a `pattern` strategy run (for the report).
struct PatternOutcome {
  std::string pattern;                  ///< function name
  std::string file;                     ///< pattern file it came from
  int benefit = 0;
  std::vector<int> groups;              ///< ids of the groups it fused
  std::vector<Rejection> near_misses;   ///< node = anchor, target = node where matching failed
};

struct FusionPlan {
  std::string strategy;                 ///< "postdom" or "greedy"
  std::vector<FusedGroup> groups;       ///< ordered by their first member
  std::vector<Rejection> rejections;
  std::vector<int> group_of;            ///< node id -> group id
  std::vector<onnx::FunctionProto> functions;  ///< functions PatternCalls refer to (domain ai.onnxfuse)
  std::vector<PatternOutcome> pattern_outcomes;  ///< per pattern, in priority order (pattern strategy only)
};

/// Builds a plan from a node -> group-label map (labels are any ints; equal labels
/// are one group) and a rule per label. Sets ids, member order, pattern and anchor.
/// `kinds` is the classifier's kind of every node.
FusionPlan MakeFusionPlan(const Graph& graph, const std::vector<OpPatternKind>& kinds,
                          const std::vector<int>& label_of_node, const std::vector<std::string>& rule_of_label,
                          std::string strategy);

/// Checks the plan's invariants: every node in exactly one group, and groups are
/// convex (no path leaves a group and comes back, so replacing each group by one
/// node keeps the graph acyclic). Throws Error(kInternal) naming the group otherwise.
void ValidateFusionPlan(const Graph& graph, const FusionPlan& plan);

/// Values the group's nodes produce (omitted outputs skipped), in production order.
std::vector<ValueId> GroupProducedValues(const Graph& graph, const FusedGroup& group);
/// Whether `value`, produced in `group`, is read outside it or is a graph output.
bool LeavesGroup(const Graph& graph, const FusionPlan& plan, const FusedGroup& group, ValueId value);
/// Values a group produces that leave it (LeavesGroup), in production order.
std::vector<ValueId> GroupOutputs(const Graph& graph, const FusionPlan& plan, const FusedGroup& group);
/// Values a group reads that it does not produce (activations and constants), in first-use order.
std::vector<ValueId> GroupInputs(const Graph& graph, const FusedGroup& group);

/// Classifier kinds of all nodes (ClassifyNode for each), indexed by NodeId.
std::vector<OpPatternKind> ClassifyAll(const Graph& graph);

}  // namespace onnxfuse
