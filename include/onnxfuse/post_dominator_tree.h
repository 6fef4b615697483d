// Post-dominator tree of the forward dataflow graph.
//
// Source: TVM src/relay/analysis/graph_partitioner.{h,cc} (DominatorTree::PostDom).
// Nodes are visited in reverse topological order; a node's parent is the least
// common ancestor (walking up by depth) of all its consumers, and the edge
// pattern is the max kind met on those paths. A node with an output that is a
// graph output (TVM's extern_ref) gets no parent and pattern kOpaque.
//
//        conv            conv's post-dominator is the final add: every path
//       /    \           from conv reaches it. The pattern on conv's tree
//    add      mul        edge is max(kind(add), kind(relu), kind(mul), kind(add)).
//     |        |
//    relu      |
//       \    /
//        add
#pragma once

#include <vector>

#include "onnxfuse/graph.h"
#include "onnxfuse/op_pattern_kind.h"

namespace onnxfuse {

struct PostDominatorTree {
  struct Entry {
    NodeId parent = kNoNode;                          ///< immediate post-dominator; kNoNode for none
    int depth = 0;                                    ///< 1 for roots
    OpPatternKind pattern = OpPatternKind::kOpaque;   ///< max edge pattern on the paths to `parent`
  };
  std::vector<Entry> nodes;  ///< indexed by NodeId
};

/// Builds the tree. `kinds[i]` is the classifier's kind of node i. O(N·depth).
PostDominatorTree BuildPostDominatorTree(const Graph& graph, const std::vector<OpPatternKind>& kinds);

}  // namespace onnxfuse
