#include "session/input_check.h"

#include "onnxfuse/error.h"

namespace onnxfuse::session {

ValueInfo ValueInfoOf(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  ValueInfo info;
  info.name = value.name;
  info.type = static_cast<ElementType>(value.type.elem_type);
  info.has_shape = value.type.has_shape;
  info.dims = value.type.dims;
  info.symbols = value.type.dim_params;
  info.symbols.resize(info.dims.size());
  return info;
}

std::string ShapeText(const std::vector<std::int64_t>& dims, const std::vector<std::string>& symbols) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ",";
    if (dims[i] >= 0) text += std::to_string(dims[i]);
    else text += i < symbols.size() && !symbols[i].empty() ? symbols[i] : "?";
  }
  return text + "]";
}

namespace {

std::string InputList(const std::vector<ValueInfo>& inputs) {
  std::string list;
  for (const ValueInfo& in : inputs) list += (list.empty() ? "" : ", ") + in.name;
  return list;
}

Error UsageError(const std::string& message) { return Error(ErrorKind::kUsage, message); }

}  // namespace

ShapeSignature CheckShapes(const std::vector<ValueInfo>& inputs,
                           const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  for (const auto& [name, shape] : shapes) {
    bool known = false;
    for (const ValueInfo& in : inputs) known = known || in.name == name;
    if (!known) throw UsageError("unknown input '" + name + "'; the model's inputs are: " + InputList(inputs));
  }
  ShapeSignature signature;
  std::map<std::string, std::pair<std::int64_t, std::string>> symbol_values;  // symbol -> value, input
  for (const ValueInfo& in : inputs) {
    auto it = shapes.find(in.name);
    if (it == shapes.end()) throw UsageError("input '" + in.name + "' is missing");
    const std::vector<std::int64_t>& shape = it->second;
    const std::string expected = " (the model declares " + ShapeText(in.dims, in.symbols) + ")";
    for (std::int64_t d : shape)
      if (d < 0) throw UsageError("input '" + in.name + "' has a negative dim: " + ShapeText(shape));
    if (in.has_shape && shape.size() != in.dims.size())
      throw UsageError("input '" + in.name + "' must have rank " + std::to_string(in.dims.size()) + ", got shape " +
                       ShapeText(shape) + expected);
    for (std::size_t i = 0; in.has_shape && i < shape.size(); ++i) {
      if (in.dims[i] >= 0 && shape[i] != in.dims[i])
        throw UsageError("input '" + in.name + "' dim " + std::to_string(i) + " must be " +
                         std::to_string(in.dims[i]) + ", got shape " + ShapeText(shape) + expected);
      if (in.dims[i] >= 0 || in.symbols[i].empty()) continue;
      auto [known, inserted] = symbol_values.emplace(in.symbols[i], std::make_pair(shape[i], in.name));
      if (!inserted && known->second.first != shape[i])
        throw UsageError("input '" + in.name + "' gives dim '" + in.symbols[i] + "' the value " +
                         std::to_string(shape[i]) + ", input '" + known->second.second + "' gave it " +
                         std::to_string(known->second.first));
    }
    signature.push_back(shape);
  }
  return signature;
}

ShapeSignature CheckInputs(const std::vector<ValueInfo>& inputs, const NamedInputs& views) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& [name, view] : views) shapes[name] = view.shape;
  ShapeSignature signature = CheckShapes(inputs, shapes);
  for (const ValueInfo& in : inputs) {
    const TensorView& view = views.at(in.name);
    if (view.dtype != in.type)
      throw UsageError("input '" + in.name + "' must be " + ElementTypeName(in.type) + ", got " +
                       ElementTypeName(view.dtype));
    if (view.data == nullptr && view.NumElements() > 0)
      throw UsageError("input '" + in.name + "' has no data (a null pointer for " +
                       std::to_string(view.NumElements()) + " elements)");
  }
  return signature;
}

}  // namespace onnxfuse::session
