#include "ir/names.h"

namespace onnxfuse {

void CollectNodeNames(const onnx::NodeProto& node, std::unordered_set<std::string>& names) {
  if (!node.name().empty()) names.insert(node.name());
  names.insert(node.input().begin(), node.input().end());
  names.insert(node.output().begin(), node.output().end());
  for (const auto& a : node.attribute()) {
    if (a.has_g()) CollectNames(a.g(), names);
    for (const auto& sub : a.graphs()) CollectNames(sub, names);
  }
}

void CollectNames(const onnx::GraphProto& graph, std::unordered_set<std::string>& names) {
  for (const auto& v : graph.input()) names.insert(v.name());
  for (const auto& v : graph.output()) names.insert(v.name());
  for (const auto& v : graph.value_info()) names.insert(v.name());
  for (const auto& t : graph.initializer()) names.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) names.insert(t.values().name());
  for (const auto& n : graph.node()) CollectNodeNames(n, names);
}

std::string FreshName(const std::string& base, std::unordered_set<std::string>& taken, int first) {
  std::string name = base;
  for (int i = first; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

}  // namespace onnxfuse
