// Reading a node's ONNX attributes, with defaults: the one attribute reader of
// onnx-fuse (rewrites, the backend's lowerings and the load stage's adapters).
//
// An attribute that is present must have the type the reader asks for
// (AttributeProto.type: INT for AttrInt, FLOAT for AttrFloat, ...). The loader's
// ONNX checker already refuses a default-domain node whose attribute type
// disagrees with its schema ("Mismatched attribute type"), so the check here
// matters for what the checker does not see (other domains, adapters that run
// before it); either way a wrong-typed attribute is the model's fault:
// Error(kInvalidModel) naming the node and the attribute, never a silent 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// The attribute `name` of `node`, or nullptr when it is absent.
const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name);
inline const onnx::AttributeProto* FindAttr(const Node& node, const std::string& name) {
  return FindAttribute(node.proto, name);
}

/// Value of attribute `name` (INT, FLOAT, STRING, INTS), or `fallback` when absent.
/// Throws Error(kInvalidModel) "node 'n' (Op): attribute 'a' is FLOAT, not INT" when present with another type.
std::int64_t AttrInt(const Node& node, const std::string& name, std::int64_t fallback);
float AttrFloat(const Node& node, const std::string& name, float fallback);
std::string AttrString(const Node& node, const std::string& name, const std::string& fallback);
std::vector<std::int64_t> AttrInts(const Node& node, const std::string& name, std::vector<std::int64_t> fallback = {});

/// The same on a NodeProto, before a Graph exists (the load stage's opset adapters).
std::int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
std::string AttrString(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);

/// An INT attribute `name` = `value`, for a node a rewrite writes.
onnx::AttributeProto IntAttribute(const std::string& name, std::int64_t value);

}  // namespace onnxfuse
