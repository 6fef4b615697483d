#include "ir/node_label.h"

namespace onnxfuse {

namespace {

std::string Quoted(const std::string& name, const std::string& op_type) { return "'" + name + "' (" + op_type + ")"; }

}  // namespace

std::string NodeName(const onnx::NodeProto& node, int index) {
  return node.name().empty() && index >= 0 ? node.op_type() + "_" + std::to_string(index) : node.name();
}

std::string QuotedNode(const Node& node) { return Quoted(node.name, node.op_type); }

std::string NodeLabel(const Node& node) { return "node " + QuotedNode(node); }

std::string NodeInFile(const Graph& graph, const Node& node) { return graph.source_path() + ": " + NodeLabel(node); }

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return "node " + Quoted(NodeName(node, index), node.op_type());
}

}  // namespace onnxfuse
