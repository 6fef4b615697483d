// Reading a node's ONNX attributes, with defaults (the backend's only access to NodeProto).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxfuse/graph.h"

namespace onnxfuse::backend {

inline const onnx::AttributeProto* FindAttr(const Node& node, const std::string& name) {
  for (const auto& attr : node.proto.attribute())
    if (attr.name() == name) return &attr;
  return nullptr;
}

inline std::int64_t AttrInt(const Node& node, const std::string& name, std::int64_t fallback) {
  const auto* attr = FindAttr(node, name);
  return attr ? attr->i() : fallback;
}

inline float AttrFloat(const Node& node, const std::string& name, float fallback) {
  const auto* attr = FindAttr(node, name);
  return attr ? attr->f() : fallback;
}

inline std::string AttrString(const Node& node, const std::string& name, const std::string& fallback) {
  const auto* attr = FindAttr(node, name);
  return attr ? attr->s() : fallback;
}

inline std::vector<std::int64_t> AttrInts(const Node& node, const std::string& name,
                                          std::vector<std::int64_t> fallback = {}) {
  const auto* attr = FindAttr(node, name);
  if (!attr) return fallback;
  return {attr->ints().begin(), attr->ints().end()};
}

/// "'name' (OpType)": how messages name a node.
inline std::string NodeLabel(const Node& node) { return "node '" + node.name + "' (" + node.op_type + ")"; }

}  // namespace onnxfuse::backend
