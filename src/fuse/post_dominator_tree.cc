#include "fuse/post_dominator_tree.h"

#include <string>

#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

using Entry = PostDominatorTree::Entry;

// TVM's DominatorTree::LeastCommonAncestor(lhs, rhs, edge_pattern): walk the
// deeper node up (both when equally deep) until the two meet, combining the
// tree pattern of every entry left behind. kNoNode when they never meet.
NodeId LeastCommonAncestor(const std::vector<Entry>& tree, NodeId lhs, NodeId rhs, OpPatternKind& pattern) {
  while (lhs != rhs) {
    if (lhs == kNoNode || rhs == kNoNode) return kNoNode;
    const Entry& l = tree[lhs];
    const Entry& r = tree[rhs];
    if (l.depth < r.depth) {
      pattern = Combine(pattern, r.pattern);
      rhs = r.parent;
    } else if (r.depth < l.depth) {
      pattern = Combine(pattern, l.pattern);
      lhs = l.parent;
    } else {
      pattern = Combine(pattern, Combine(l.pattern, r.pattern));
      lhs = l.parent;
      rhs = r.parent;
    }
  }
  return lhs;
}

}  // namespace

bool IsExternRef(const Graph& graph, NodeId node) {
  for (ValueId v : graph.node(node).outputs)
    if (v != kNoValue && graph.value(v).is_graph_output) return true;
  return false;
}

PostDominatorTree BuildPostDominatorTree(const Graph& graph, const std::vector<OpPatternKind>& kinds) {
  Check(kinds.size() == graph.num_nodes(), "post-dominator tree: one kind per node");
  PostDominatorTree tree;
  tree.nodes.resize(graph.num_nodes());
  // Reverse topological order: every consumer's entry is final before its producers'.
  for (NodeId id = static_cast<NodeId>(graph.num_nodes()); id-- > 0;) {
    Entry& entry = tree.nodes[id];
    if (IsExternRef(graph, id)) {
      entry = Entry{kNoNode, 1, OpPatternKind::kOpaque};
      continue;
    }
    // TVM's DominatorTree::GetNode: the LCA of all output edges.
    OpPatternKind pattern = OpPatternKind::kElemWise;
    NodeId parent = kNoNode;
    bool first = true;
    for (ValueId v : graph.node(id).outputs) {
      if (v == kNoValue) continue;
      for (NodeId consumer : graph.value(v).consumers) {
        if (consumer <= id)
          Check(false, "post-dominator tree: " + NodeLabel(graph.node(id)) + " is not before its consumer " +
                           QuotedNode(graph.node(consumer)));
        if (first) {
          parent = consumer;
          first = false;
        } else if (parent != consumer) {  // LCA(x, x) == x: the single-consumer case stays O(1)
          parent = LeastCommonAncestor(tree.nodes, parent, consumer, pattern);
        }
        pattern = Combine(pattern, EdgePattern(graph, v, consumer, kinds[consumer]));
      }
    }
    entry.parent = parent;
    entry.depth = parent == kNoNode ? 1 : tree.nodes[parent].depth + 1;
    entry.pattern = pattern;
  }
  return tree;
}

}  // namespace onnxfuse
