#include "ir/attributes.h"

#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

using onnx::AttributeProto;

std::string TypeName(AttributeProto::AttributeType type) {
  return AttributeProto::AttributeType_IsValid(type) ? AttributeProto::AttributeType_Name(type)
                                                     : "type " + std::to_string(static_cast<int>(type));
}

// The attribute, after checking its type; nullptr when absent. `label` names the node.
const AttributeProto* Typed(const onnx::NodeProto& node, const std::string& name, AttributeProto::AttributeType want,
                            const std::string& label) {
  const AttributeProto* attr = FindAttribute(node, name);
  if (attr && attr->type() != want)
    throw Error(ErrorKind::kInvalidModel,
                label + ": attribute '" + name + "' is " + TypeName(attr->type()) + ", not " + TypeName(want));
  return attr;
}

const AttributeProto* Typed(const Node& node, const std::string& name, AttributeProto::AttributeType want) {
  return Typed(node.proto, name, want, NodeLabel(node));
}

}  // namespace

const AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute())
    if (attr.name() == name) return &attr;
  return nullptr;
}

std::int64_t AttrInt(const Node& node, const std::string& name, std::int64_t fallback) {
  const auto* attr = Typed(node, name, AttributeProto::INT);
  return attr ? attr->i() : fallback;
}

float AttrFloat(const Node& node, const std::string& name, float fallback) {
  const auto* attr = Typed(node, name, AttributeProto::FLOAT);
  return attr ? attr->f() : fallback;
}

std::string AttrString(const Node& node, const std::string& name, const std::string& fallback) {
  const auto* attr = Typed(node, name, AttributeProto::STRING);
  return attr ? attr->s() : fallback;
}

std::vector<std::int64_t> AttrInts(const Node& node, const std::string& name, std::vector<std::int64_t> fallback) {
  const auto* attr = Typed(node, name, AttributeProto::INTS);
  return attr ? std::vector<std::int64_t>(attr->ints().begin(), attr->ints().end()) : fallback;
}

std::int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const auto* attr = Typed(node, name, AttributeProto::INT, NodeLabel(node));
  return attr ? attr->i() : fallback;
}

std::string AttrString(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const auto* attr = Typed(node, name, AttributeProto::STRING, NodeLabel(node));
  return attr ? attr->s() : fallback;
}

onnx::AttributeProto IntAttribute(const std::string& name, std::int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::INT);
  a.set_i(value);
  return a;
}

}  // namespace onnxfuse
