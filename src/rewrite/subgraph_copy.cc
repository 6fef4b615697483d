#include "rewrite/subgraph_copy.h"

#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

std::map<std::string, std::string> WithoutDefinedBy(const onnx::GraphProto& g, std::map<std::string, std::string> rename) {
  for (const auto& v : g.input()) rename.erase(v.name());
  for (const auto& t : g.initializer()) rename.erase(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) rename.erase(o);
  return rename;
}

void RenameNode(onnx::NodeProto& node, const std::map<std::string, std::string>& rename);

// The free names a nested subgraph reads (its names shadow nothing: ONNX names are unique across scopes).
void RenameFree(onnx::GraphProto& g, const std::map<std::string, std::string>& outer) {
  const auto rename = WithoutDefinedBy(g, outer);
  if (rename.empty()) return;
  for (auto& node : *g.mutable_node()) RenameNode(node, rename);
  for (auto& out : *g.mutable_output())
    if (auto it = rename.find(out.name()); it != rename.end()) out.set_name(it->second);
}

void RenameNode(onnx::NodeProto& node, const std::map<std::string, std::string>& rename) {
  for (auto& name : *node.mutable_input())
    if (auto it = rename.find(name); it != rename.end()) name = it->second;
  for (auto& name : *node.mutable_output())
    if (auto it = rename.find(name); it != rename.end()) name = it->second;
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) RenameFree(*a.mutable_g(), rename);
    for (auto& sub : *a.mutable_graphs()) RenameFree(sub, rename);
  }
}

}  // namespace

BodyCopy CopyBody(const onnx::GraphProto& body, const std::vector<std::string>& inputs, const std::string& prefix,
                  NameSource& names, const std::string& node_label) {
  if (body.sparse_initializer_size() > 0)
    throw Error(ErrorKind::kUnsupported, node_label + ": its body '" + body.name() + "' has sparse initializers");
  if (static_cast<int>(inputs.size()) != body.input_size())
    throw Error(ErrorKind::kInvalidModel, node_label + ": its body '" + body.name() + "' takes " +
                                              std::to_string(body.input_size()) + " inputs, the node gives " +
                                              std::to_string(inputs.size()));
  std::map<std::string, std::string> rename;
  for (int i = 0; i < body.input_size(); ++i) rename[body.input(i).name()] = inputs[static_cast<std::size_t>(i)];
  BodyCopy copy;
  for (const auto& t : body.initializer()) {
    if (rename.count(t.name())) continue;  // IR < 4 lists initializers as inputs too: the input's binding wins
    copy.initializers.push_back(t);
    copy.initializers.back().set_name(rename[t.name()] = names.Fresh(prefix + t.name()));
  }
  for (const auto& n : body.node())
    for (const auto& o : n.output())
      if (!o.empty()) rename[o] = names.Fresh(prefix + o);
  for (int i = 0; i < body.node_size(); ++i) {
    onnx::NodeProto node = body.node(i);
    node.set_name(names.Fresh(prefix + (node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name())));
    RenameNode(node, rename);
    copy.nodes.push_back(std::move(node));
  }
  for (const auto& out : body.output()) {
    auto it = rename.find(out.name());
    copy.outputs.push_back(it == rename.end() ? out.name() : it->second);
  }
  return copy;
}

void RenameValues(std::vector<onnx::NodeProto>& nodes, const std::map<std::string, std::string>& rename) {
  for (auto& node : nodes) RenameNode(node, rename);
}

}  // namespace onnxfuse
