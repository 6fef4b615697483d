// Helpers shared by the down-conversion adapters (down_adapters.h).
#include <algorithm>

#include "load/down_adapters.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"

namespace onnxfuse::load {

void DownContext::Refuse(const onnx::NodeProto& node, const std::string& why) const {
  throw Error(ErrorKind::kUnsupported, source + ": node '" + node.name() + "' (" + node.op_type() + ", opset " +
                                           std::to_string(from_opset) + "): " + why);
}

void DownContext::MissingDims(const onnx::NodeProto& node, const std::string& value) const {
  Refuse(node, "the shape of '" + value + "' is neither declared nor inferable, and the rewrite needs it" +
                   (inference_failure.empty() ? "" : " (shape inference of the nodes before it: " + inference_failure + ")"));
}

std::optional<std::vector<std::int64_t>> DownContext::Ints(const std::string& name) const {
  const onnx::TensorProto* t = name.empty() ? nullptr : constant(name);
  if (!t) return std::nullopt;
  if (t->data_type() != onnx::TensorProto::INT64 && t->data_type() != onnx::TensorProto::INT32) return std::nullopt;
  return DecodeTensor<std::int64_t>(*t, source + ": '" + name + "'");
}

void RemoveAttribute(onnx::NodeProto& node, const std::string& name) {
  auto* attrs = node.mutable_attribute();
  attrs->erase(std::remove_if(attrs->begin(), attrs->end(), [&](const auto& a) { return a.name() == name; }),
               attrs->end());
}

void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values) {
  RemoveAttribute(node, name);
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a->add_ints(v);
}

onnx::NodeProto MakeNode(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  n.set_name(name);
  for (const auto& i : inputs) n.add_input(i);
  for (const auto& o : outputs) n.add_output(o);
  return n;
}

onnx::TensorProto IntTensor(const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<std::int64_t>(values.size()));
  for (auto v : values) t.add_int64_data(v);
  return t;
}

onnx::TensorProto FloatScalar(const std::string& name, float value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  return t;
}

onnx::NodeProto ConstantNode(const std::string& output, float value) {
  onnx::NodeProto n = MakeNode("Constant", {}, {output}, output);
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = FloatScalar("", value);
  return n;
}

}  // namespace onnxfuse::load
