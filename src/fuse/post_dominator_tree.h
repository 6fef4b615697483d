// Post-dominator tree of the forward dataflow graph.
//
// Source: TVM src/relay/analysis/graph_partitioner.{h,cc} (DominatorTree::PostDom,
// DominatorTree::LeastCommonAncestor, DominatorTree::GetNode).
//
// The forward graph is our Graph: nodes are already in topological order (TVM's
// post-DFS order). For every output value v of a node p and every consumer c of
// v there is an edge p->c whose pattern is EdgePattern(graph, v, c, kinds[c]):
// the consumer's kind, except that a broadcast consumer is elementwise on an
// edge whose shapes are equal.
//
// Nodes are visited in reverse topological order, so every consumer already has
// its tree entry. A node's parent (immediate post-dominator) is the least common
// ancestor of all its consumers: two nodes are walked up the tree, the deeper
// one first, until they meet; the entry's pattern is the max of the edge
// patterns of the node's own edges and of the tree patterns passed on the way.
// A node with an output that is a graph output (TVM's extern_ref) gets no
// parent, depth 1 and pattern kOpaque. A node without consumers gets no parent,
// depth 1 and pattern kElemWise (TVM's initial value). If any two consumers
// have no common ancestor the node has no parent.
//
//        conv            conv's post-dominator is the final add: every path
//       /    \           from conv reaches it. The pattern on conv's tree
//    add      mul        edge is the max of the edge patterns on those paths:
//     |        |         conv->add, add->relu, relu->add, conv->mul, mul->add.
//    relu      |
//       \    /
//        add
//
// Complexity: O(E) for the edges plus the LCA walks. A single-consumer node
// costs O(1); a node with several consumers costs the tree distance from its
// consumers to their common ancestor (bounded by the depth, which is N on a
// chain). Iterative: no recursion, so 200k-node chains are fine.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "classify/op_pattern_kind.h"

namespace onnxfuse {

struct PostDominatorTree {
  struct Entry {
    NodeId parent = kNoNode;                          ///< immediate post-dominator; kNoNode for none
    int depth = 0;                                    ///< 1 for roots, parent's depth + 1 otherwise
    OpPatternKind pattern = OpPatternKind::kOpaque;   ///< max edge pattern on the paths to `parent`
  };
  std::vector<Entry> nodes;  ///< indexed by NodeId
};

/// True when any output of `node` is a graph output (TVM's extern_ref).
bool IsExternRef(const Graph& graph, NodeId node);

/// Builds the tree. `kinds[i]` is the classifier's kind of node i (ClassifyAll).
/// Throws Error(kInternal) (via Check) when `kinds` has the wrong size or the nodes are not in
/// topological order.
PostDominatorTree BuildPostDominatorTree(const Graph& graph, const std::vector<OpPatternKind>& kinds);

}  // namespace onnxfuse
