#include "rewrite/name_source.h"

namespace onnxfuse {

namespace {

void CollectNames(const onnx::GraphProto& g, std::unordered_set<std::string>& names) {
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& v : g.output()) names.insert(v.name());
  for (const auto& v : g.value_info()) names.insert(v.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& t : g.sparse_initializer()) names.insert(t.values().name());
  for (const auto& n : g.node()) {
    if (!n.name().empty()) names.insert(n.name());
    names.insert(n.input().begin(), n.input().end());
    names.insert(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectNames(a.g(), names);
      for (const auto& sub : a.graphs()) CollectNames(sub, names);
    }
  }
}

}  // namespace

NameSource::NameSource(const onnx::ModelProto& model) { CollectNames(model.graph(), taken_); }

std::string NameSource::Fresh(const std::string& base) {
  std::string name = base;
  for (int i = 2; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
  taken_.insert(name);
  return name;
}

}  // namespace onnxfuse
