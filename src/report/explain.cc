#include "report/explain.h"

#include <sstream>

#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

std::string Describe(const Graph& graph, const std::vector<OpPatternKind>& kinds, NodeId id) {
  return graph.node(id).name + " (" + graph.node(id).op_type + ", " + std::string(ToString(kinds[id])) + ")";
}

}  // namespace

std::string ExplainNode(const Graph& graph, const std::vector<OpPatternKind>& kinds, const FusionPlan& plan,
                        const std::vector<std::string>& function_of_group, const std::string& node_name) {
  NodeId node = kNoNode;
  for (NodeId id = 0; id < graph.num_nodes() && node == kNoNode; ++id)
    if (graph.node(id).name == node_name) node = id;
  std::ostringstream out;
  // A node the opset conversion rewrote: what it became (its name stays on
  // the last node of its rewrite).
  for (const auto& c : graph.conversion().nodes)
    if (c.node == node_name)
      out << "node '" << c.node << "' (" << c.op_type << ", opset " << graph.conversion().from_opset
          << ") converted to opset " << graph.conversion().to_opset << ": " << c.adapter << "\n";
  if (node == kNoNode && out.tellp() > 0) return out.str();
  if (node == kNoNode) throw Error(ErrorKind::kUsage, "--explain: the model has no node named '" + node_name + "'");

  const FusedGroup& group = plan.groups[static_cast<std::size_t>(plan.group_of[node])];
  out << Describe(graph, kinds, node) << "\n";
  if (group.nodes.size() == 1) {
    out << "  stays alone (group " << group.id << ")\n";
  } else {
    const std::string& function = function_of_group.empty() ? "" : function_of_group[static_cast<std::size_t>(group.id)];
    out << "  fused in group " << group.id << (function.empty() ? "" : " as " + function) << " by "
        << group.rule << ", with:\n";
    for (NodeId member : group.nodes)
      if (member != node) out << "    " << Describe(graph, kinds, member) << "\n";
  }
  for (const auto& r : plan.rejections) {
    if (r.node == node)
      out << "  not fused further (" << r.reason << "): " << r.detail << "\n";
    else if (r.target == node)
      out << "  " << graph.node(r.node).name << " did not fuse into it (" << r.reason << "): " << r.detail << "\n";
  }
  for (const auto& outcome : plan.pattern_outcomes)
    for (const auto& miss : outcome.near_misses)
      if (miss.node == node || miss.target == node)
        out << "  pattern " << outcome.pattern << " anchored at " << graph.node(miss.node).name
            << " did not match (" << miss.reason << "): " << miss.detail << "\n";
  return out.str();
}

}  // namespace onnxfuse
