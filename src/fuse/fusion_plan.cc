#include "fuse/fusion_plan.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

std::vector<OpPatternKind> ClassifyAll(const Graph& graph) {
  std::vector<OpPatternKind> kinds(graph.num_nodes());
  for (NodeId id = 0; id < graph.num_nodes(); ++id) kinds[id] = ClassifyNode(graph, id);
  return kinds;
}

FusionPlan MakeFusionPlan(const Graph& graph, const std::vector<OpPatternKind>& kinds,
                          const std::vector<int>& label_of_node, const std::vector<std::string>& rule_of_label,
                          std::string strategy) {
  Check(label_of_node.size() == graph.num_nodes(), "one group label per node");
  FusionPlan plan;
  plan.strategy = std::move(strategy);
  plan.group_of.assign(graph.num_nodes(), -1);
  std::map<int, int> group_of_label;
  // Nodes are in topological order, so groups come out ordered by first member.
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    int label = label_of_node[id];
    auto [it, inserted] = group_of_label.emplace(label, static_cast<int>(plan.groups.size()));
    if (inserted) {
      FusedGroup group;
      group.id = it->second;
      group.pattern = kinds[id];
      if (label >= 0 && static_cast<std::size_t>(label) < rule_of_label.size()) group.rule = rule_of_label[label];
      plan.groups.push_back(std::move(group));
    }
    FusedGroup& group = plan.groups[static_cast<std::size_t>(it->second)];
    group.nodes.push_back(id);
    group.pattern = Combine(group.pattern, kinds[id]);
    if (kinds[id] == OpPatternKind::kOutEWiseFusable && group.anchor == kNoNode) group.anchor = id;
    plan.group_of[id] = it->second;
  }
  for (auto& group : plan.groups)
    if (group.nodes.size() == 1) group.rule.clear();
  return plan;
}

void ValidateFusionPlan(const Graph& graph, const FusionPlan& plan) {
  Check(plan.group_of.size() == graph.num_nodes(), "plan covers every node");
  std::vector<int> seen(graph.num_nodes(), 0);
  for (const auto& group : plan.groups)
    for (NodeId id : group.nodes) {
      Check(id < graph.num_nodes() && plan.group_of[id] == group.id, "group membership agrees with group_of");
      ++seen[id];
    }
  for (NodeId id = 0; id < graph.num_nodes(); ++id)  // the message is built only for a node that fails
    if (seen[id] != 1) Check(false, NodeLabel(graph.node(id)) + " is in exactly one group");

  // Convexity: the quotient graph over groups must be acyclic (Kahn's algorithm).
  const std::size_t n = plan.groups.size();
  std::vector<std::unordered_set<int>> successors(n);
  std::vector<int> indegree(n, 0);
  for (NodeId id = 0; id < graph.num_nodes(); ++id)
    for (NodeId consumer : graph.Consumers(id)) {
      int from = plan.group_of[id], to = plan.group_of[consumer];
      if (from != to && successors[static_cast<std::size_t>(from)].insert(to).second) ++indegree[static_cast<std::size_t>(to)];
    }
  std::vector<int> ready;
  for (std::size_t g = 0; g < n; ++g)
    if (indegree[g] == 0) ready.push_back(static_cast<int>(g));
  std::size_t visited = 0;
  while (!ready.empty()) {
    int g = ready.back();
    ready.pop_back();
    ++visited;
    for (int s : successors[static_cast<std::size_t>(g)])
      if (--indegree[static_cast<std::size_t>(s)] == 0) ready.push_back(s);
  }
  if (visited != n) {
    for (std::size_t g = 0; g < n; ++g)
      Check(indegree[g] == 0, "group " + std::to_string(g) + " (first node '" +
                                  graph.node(plan.groups[g].nodes.front()).name +
                                  "') is not convex: a path leaves it and comes back");
  }
}

std::vector<ValueId> GroupProducedValues(const Graph& graph, const FusedGroup& group) {
  std::vector<ValueId> produced;
  for (NodeId id : group.nodes)
    for (ValueId v : graph.node(id).outputs)
      if (v != kNoValue) produced.push_back(v);
  return produced;
}

bool LeavesGroup(const Graph& graph, const FusionPlan& plan, const FusedGroup& group, ValueId value) {
  const Value& v = graph.value(value);
  return v.is_graph_output || std::any_of(v.consumers.begin(), v.consumers.end(),
                                          [&](NodeId c) { return plan.group_of[c] != group.id; });
}

std::vector<ValueId> GroupOutputs(const Graph& graph, const FusionPlan& plan, const FusedGroup& group) {
  std::vector<ValueId> outputs;
  for (ValueId v : GroupProducedValues(graph, group))
    if (LeavesGroup(graph, plan, group, v)) outputs.push_back(v);
  return outputs;
}

std::vector<ValueId> GroupInputs(const Graph& graph, const FusedGroup& group) {
  std::unordered_set<NodeId> members(group.nodes.begin(), group.nodes.end());
  std::vector<ValueId> inputs;
  std::unordered_set<ValueId> listed;
  for (NodeId id : group.nodes)
    for (ValueId v : graph.node(id).inputs) {
      if (v == kNoValue) continue;
      NodeId producer = graph.value(v).producer;
      if (producer != kNoNode && members.count(producer)) continue;
      if (listed.insert(v).second) inputs.push_back(v);
    }
  return inputs;
}

}  // namespace onnxfuse
