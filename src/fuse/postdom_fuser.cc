#include "fuse/postdom_fuser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/node_label.h"
#include "onnxfuse/error.h"
#include "fuse/post_dominator_tree.h"

namespace onnxfuse {

namespace {

using K = OpPatternKind;

// The condition CheckPath applies to the root group of every node on the paths
// (TVM's fcond lambdas in RunFuse).
enum class PathRule { kOutEWiseFusable, kElemWise, kInjective };

bool Accepts(PathRule rule, K kind, bool is_sink) {
  switch (rule) {
    case PathRule::kOutEWiseFusable:
      return kind <= K::kBroadcast;
    case PathRule::kElemWise:
      // Parallel branches may hold injective ops; the sink may already be a
      // reduction's or a conv's group.
      if (!is_sink) return kind <= K::kInjective;
      return kind <= K::kInjective || kind == K::kCommReduce || kind == K::kOutEWiseFusable;
    case PathRule::kInjective:
      return kind <= K::kInjective;
  }
  return false;
}

std::string KindName(K kind) { return std::string(ToString(kind)); }

class Partitioner {
 public:
  Partitioner(const Graph& graph, const std::vector<K>& kinds, const PostDominatorTree& tree,
              const FuserOptions& options)
      : graph_(graph), kinds_(kinds), tree_(tree), options_(options) {
    const std::size_t n = graph.num_nodes();
    uf_parent_.resize(n);
    for (NodeId id = 0; id < n; ++id) uf_parent_[id] = id;
    pattern_ = kinds;  // TVM's InitGroups: one group per node, pattern = the node's kind
    anchor_.assign(n, kNoNode);
    for (NodeId id = 0; id < n; ++id)
      if (kinds[id] == K::kOutEWiseFusable) anchor_[id] = id;
    num_nodes_.assign(n, 1);
    first_phase_.assign(n, -1);
    member_next_.assign(n, kNoNode);
    member_tail_.resize(n);
    for (NodeId id = 0; id < n; ++id) member_tail_[id] = id;
    rejection_.resize(n);
    visit_mark_.assign(n, 0);
    root_mark_.assign(n, 0);
    value_mark_.assign(graph.values().size(), 0);
  }

  // TVM's GraphPartitioner::Partition: phases 0, 1, 2 over the nodes in topological order.
  void Run() {
    for (int phase = 0; phase < 3; ++phase) {
      postponed_.clear();
      for (NodeId id = 0; id < graph_.num_nodes(); ++id) Visit(id, phase, /*retry=*/false);
      // Fusions over the argument limit were postponed: retry them once the phase's
      // other fusions are in place; a second failure is final.
      std::vector<NodeId> retry;
      retry.swap(postponed_);
      for (NodeId id : retry) Visit(id, phase, /*retry=*/true);
    }
  }

  FusionPlan Plan() {
    const std::size_t n = graph_.num_nodes();
    std::vector<int> label(n);
    std::vector<std::string> rules(n);
    for (NodeId id = 0; id < n; ++id) {
      NodeId root = Find(id);
      label[id] = static_cast<int>(root);
      if (root == id && first_phase_[id] >= 0) rules[id] = "postdom.phase" + std::to_string(first_phase_[id]);
    }
    FusionPlan plan = MakeFusionPlan(graph_, kinds_, label, rules, "postdom");
    for (NodeId id = 0; id < n; ++id) {
      if (rejection_[id].reason.empty()) continue;
      NodeId parent = tree_.nodes[id].parent;
      if (parent != kNoNode && Find(id) == Find(parent)) continue;  // joined later, e.g. as a path node
      plan.rejections.push_back(rejection_[id]);
    }
    return plan;
  }

 private:
  // --- union-find (TVM's Group::FindRoot, MergeFromTo) ---
  NodeId Find(NodeId id) {
    NodeId root = id;
    while (uf_parent_[root] != root) root = uf_parent_[root];
    while (uf_parent_[id] != root) {
      NodeId next = uf_parent_[id];
      uf_parent_[id] = root;
      id = next;
    }
    return root;
  }

  void MergeFromTo(NodeId child, NodeId parent, int phase) {
    child = Find(child);
    parent = Find(parent);
    if (child == parent) return;
    num_nodes_[parent] += num_nodes_[child];
    uf_parent_[child] = parent;
    member_next_[member_tail_[parent]] = child;  // append the child's member list
    member_tail_[parent] = member_tail_[child];
    int first = phase;
    for (int p : {first_phase_[parent], first_phase_[child]})
      if (p >= 0) first = std::min(first, p);
    first_phase_[parent] = first;
    if (anchor_[child] != kNoNode) {
      if (anchor_[parent] != kNoNode)
        Check(false, "postdom fuser: merging two kOutEWiseFusable ops '" + Name(anchor_[child]) + "' and '" +
                         Name(anchor_[parent]) + "' into one group");
      anchor_[parent] = anchor_[child];
      pattern_[parent] = Combine(pattern_[child], pattern_[parent]);
    }
  }

  // --- path walks ---
  template <typename F>
  void ForEachConsumer(NodeId id, F f) const {
    for (ValueId v : graph_.node(id).outputs)
      if (v != kNoValue)
        for (NodeId c : graph_.value(v).consumers) f(c);
  }

  // TVM's CheckPath: every node reachable from src's consumers up to (and
  // including) the sink must have a root group that `rule` accepts. Returns the
  // first node that fails, or kNoNode. Leaves the nodes strictly between src and
  // sink in region_.
  NodeId CheckPath(NodeId src, NodeId sink, PathRule rule) {
    const std::uint32_t mark = ++stamp_;
    region_.clear();
    stack_.clear();
    PushConsumers(src);
    while (!stack_.empty()) {
      NodeId id = stack_.back();
      stack_.pop_back();
      if (visit_mark_[id] == mark) continue;
      visit_mark_[id] = mark;
      // Every path from src reaches the sink, so nothing past it is reachable first.
      if (id > sink) Check(false, "postdom fuser: '" + Name(id) + "' lies past the post-dominator of '" + Name(src) + "'");
      const bool is_sink = id == sink;
      if (!Accepts(rule, pattern_[Find(id)], is_sink)) return id;
      if (is_sink) continue;
      region_.push_back(id);
      PushConsumers(id);
    }
    return kNoNode;
  }

  // Pushes consumers so that the first one is popped first (a preorder like TVM's recursion).
  void PushConsumers(NodeId id) {
    const std::size_t begin = stack_.size();
    ForEachConsumer(id, [&](NodeId c) { stack_.push_back(c); });
    std::reverse(stack_.begin() + static_cast<std::ptrdiff_t>(begin), stack_.end());
  }

  // Marks the roots of src, region_ and sink with a fresh stamp; returns it.
  std::uint32_t MarkMergedRoots(NodeId src, NodeId sink) {
    const std::uint32_t mark = ++stamp_;
    merged_roots_.clear();
    auto add = [&](NodeId id) {
      NodeId root = Find(id);
      if (root_mark_[root] == mark) return;
      root_mark_[root] = mark;
      merged_roots_.push_back(root);
    };
    add(src);
    add(sink);
    for (NodeId id : region_) add(id);
    return mark;
  }

  // Nodes in the group CommitFuse would make (exact: each group counted once).
  std::int64_t MergedSize(NodeId src, NodeId sink) {
    MarkMergedRoots(src, sink);
    std::int64_t size = 0;
    for (NodeId root : merged_roots_) size += num_nodes_[root];
    return size;
  }

  // Distinct values the merged group would read from outside (activations and
  // constants), counted up to `limit` + 1: stopping there keeps a node with a huge
  // fan-in (a Sum of 100k branches) from making every check O(fan-in).
  std::int64_t MergedArgs(NodeId src, NodeId sink, std::int64_t limit) {
    const std::uint32_t mark = MarkMergedRoots(src, sink);
    std::int64_t args = 0;
    for (NodeId root : merged_roots_)
      for (NodeId member = root; member != kNoNode; member = member_next_[member])
        for (ValueId v : graph_.node(member).inputs) {
          if (v == kNoValue || value_mark_[v] == mark) continue;
          value_mark_[v] = mark;
          NodeId producer = graph_.value(v).producer;
          if ((producer == kNoNode || root_mark_[Find(producer)] != mark) && ++args > limit) return args;
        }
    return args;
  }

  // TVM's CommitFuse over the region CheckPath found.
  void CommitFuse(NodeId src, NodeId sink, int phase) {
    MergeFromTo(src, sink, phase);
    for (NodeId id : region_) MergeFromTo(id, sink, phase);
  }

  // --- one node in one phase (TVM's RunFuse loop body) ---
  void Visit(NodeId id, int phase, bool retry) {
    const K kind = pattern_[id];  // TVM reads the node's own group entry, not its root
    const NodeId dom = tree_.nodes[id].parent;
    const K dom_edge = tree_.nodes[id].pattern;
    if (kind == K::kOpaque) {
      return Reject(id, dom, "opaque", QuotedNode(graph_.node(id)) + " is opaque");
    }
    if (dom == kNoNode) return RejectWithoutDominator(id);
    if (Find(id) == Find(dom)) return Joined(id);  // already in its post-dominator's group
    const K dom_root_kind = pattern_[Find(dom)];
    PathRule rule = PathRule::kInjective;
    if (phase == 2) {
      // Fuse injective ops into tuples that injective consumers have already absorbed.
      if (kind > K::kInjective || dom_root_kind == K::kTuple) return;
      if (!(pattern_[dom] == K::kTuple && dom_root_kind <= K::kInjective)) return;
    } else if (pattern_[dom] == K::kTuple) {
      return Reject(id, dom, "post_dominator_is_tuple",
                    "the post-dominator " + Name(dom) + " of " + Name(id) + " is a tuple (kTuple)");
    } else if (kind == K::kOutEWiseFusable) {
      if (phase != 0) return;
      if (dom_edge != K::kElemWise)
        return Reject(id, dom, "dominator_edge_not_elemwise", PathPasses(id, dom, dom_edge));
      rule = PathRule::kOutEWiseFusable;
    } else if (kind <= K::kBroadcast) {
      if (!(dom_edge <= K::kInjective || dom_edge == K::kCommReduce))
        return Reject(id, dom, "dominator_edge_not_fusable", PathPasses(id, dom, dom_edge));
      rule = PathRule::kElemWise;
    } else if (kind == K::kInjective || kind == K::kTuple) {
      if (phase != 1) return;  // deferred so that convs finish fusing first; not a rejection
    } else {
      Check(kind == K::kCommReduce, "postdom fuser: unexpected kind of '" + Name(id) + "'");
      return Reject(id, dom, "reduction_is_sink",
                    QuotedNode(graph_.node(id)) + " is a reduction: reductions end groups and never fuse into their consumers");
    }

    if (NodeId bad = CheckPath(id, dom, rule); bad != kNoNode) return RejectPath(id, dom, bad);
    const std::int64_t size = MergedSize(id, dom);
    if (size > options_.max_group_size)
      return Reject(id, dom, "group_size_limit",
                    "fusing " + Name(id) + " into the group of its post-dominator " + Name(dom) +
                        " would make a group of " + std::to_string(size) + " nodes (limit " +
                        std::to_string(options_.max_group_size) + ")");
    if (options_.max_group_args > 0) {
      if (MergedArgs(id, dom, options_.max_group_args) > options_.max_group_args) {
        if (!retry) return postponed_.push_back(id);
        return Reject(id, dom, "argument_limit",
                      "fusing " + Name(id) + " into the group of its post-dominator " + Name(dom) +
                          " would give the group more than " + std::to_string(options_.max_group_args) +
                          " distinct inputs");
      }
    }
    CommitFuse(id, dom, phase);
    Joined(id);
  }

  // --- rejections: one record per node, the latest outcome wins ---
  void Reject(NodeId id, NodeId target, std::string reason, std::string detail) {
    rejection_[id] = Rejection{id, target, std::move(reason), std::move(detail)};
  }
  void Joined(NodeId id) { rejection_[id] = Rejection{}; }

  void RejectWithoutDominator(NodeId id) {
    for (ValueId v : graph_.node(id).outputs)
      if (v != kNoValue && graph_.value(v).is_graph_output)
        return Reject(id, kNoNode, "graph_output",
                      Name(id) + " produces the graph output '" + graph_.value(v).name + "', which ends its group");
    bool has_consumer = false;
    ForEachConsumer(id, [&](NodeId) { has_consumer = true; });
    Reject(id, kNoNode, "no_post_dominator",
           has_consumer ? "the outputs of " + Name(id) + " go to branches that never meet again"
                        : Name(id) + " has no consumers");
  }

  void RejectPath(NodeId id, NodeId dom, NodeId bad) {
    const NodeId bad_root = Find(bad);
    const K bad_kind = pattern_[bad_root];
    const NodeId own_anchor = anchor_[Find(id)];
    const NodeId bad_anchor = anchor_[bad_root];
    if (own_anchor != kNoNode && bad_anchor != kNoNode) {
      const std::string where =
          bad == dom ? "its post-dominator " + Name(dom) : Name(bad) + " on the path to " + Name(dom);
      return Reject(id, dom, "two_out_ewise_fusable",
                    "the group of " + Name(id) + " has the kOutEWiseFusable op " + Name(own_anchor) + ", and " +
                        where + " is in a group that already has " + Name(bad_anchor));
    }
    if (bad == dom)
      return Reject(id, dom, "path_not_fusable",
                    "the post-dominator " + Name(dom) + " of " + Name(id) + " is in a " + KindName(bad_kind) +
                        " group");
    Reject(id, dom, "path_not_fusable",
           "the path from " + Name(id) + " to its post-dominator " + Name(dom) + " passes " + Name(bad) +
               ", whose group is " + KindName(bad_kind));
  }

  std::string PathPasses(NodeId id, NodeId dom, K edge) const {
    return "the path from " + Name(id) + " to its post-dominator " + Name(dom) + " passes " + KindName(edge);
  }

  const std::string& Name(NodeId id) const { return graph_.node(id).name; }

  const Graph& graph_;
  const std::vector<K>& kinds_;
  const PostDominatorTree& tree_;
  const FuserOptions& options_;

  // Group state; entries are meaningful at roots (pattern_ also at former roots, as in TVM).
  std::vector<NodeId> uf_parent_;
  std::vector<K> pattern_;
  std::vector<NodeId> anchor_;
  std::vector<std::int64_t> num_nodes_;
  std::vector<int> first_phase_;
  std::vector<NodeId> member_next_;  // members of a group: a list from the root through member_next_
  std::vector<NodeId> member_tail_;

  std::vector<Rejection> rejection_;  // reason "" = none
  std::vector<NodeId> postponed_;

  // Scratch for the walks: marks compared against a per-walk stamp (no clearing).
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> visit_mark_, root_mark_, value_mark_;
  std::vector<NodeId> stack_, region_, merged_roots_;
};

}  // namespace

FusionPlan FuseByPostDominator(const Graph& graph, const FuserOptions& options) {
  return FuseByPostDominator(graph, options, ClassifyAll(graph));
}

FusionPlan FuseByPostDominator(const Graph& graph, const FuserOptions& options, const std::vector<K>& kinds) {
  Check(kinds.size() == graph.num_nodes(), "one kind per node");
  const PostDominatorTree tree = BuildPostDominatorTree(graph, kinds);
  Partitioner partitioner(graph, kinds, tree, options);
  partitioner.Run();
  FusionPlan plan = partitioner.Plan();
  ValidateFusionPlan(graph, plan);
  return plan;
}

}  // namespace onnxfuse
