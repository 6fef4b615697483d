#include "rewrite/qdq_writer.h"

#include <algorithm>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "load/loader.h"

namespace onnxfuse {

std::optional<std::vector<float>> FloatConstant(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  if (!v || !graph.IsConstant(*v)) return std::nullopt;
  const onnx::TensorProto* proto = graph.ConstantTensor(*v);
  if (!proto || proto->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  return TensorFromProto(*proto, name).data;
}

bool IsConstantValue(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  return v && graph.IsConstant(*v);
}

std::size_t RankOf(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  return v && graph.value(*v).type.has_shape ? graph.value(*v).type.dims.size() : 0;
}

std::string OptionalInput(const onnx::NodeProto& proto, int slot) {
  return slot >= 0 && slot < proto.input_size() ? proto.input(slot) : std::string();
}

std::vector<NodeId> FloatCastReaders(const Graph& graph, ValueId v, bool& others) {
  const auto& outputs = graph.outputs();
  others = std::find(outputs.begin(), outputs.end(), v) != outputs.end();
  std::vector<NodeId> casts;
  for (NodeId reader : graph.value(v).consumers) {
    const Node& node = graph.node(reader);
    if (node.domain.empty() && node.op_type == "Cast" && AttrInt(node, "to", 0) == onnx::TensorProto::FLOAT)
      casts.push_back(reader);
    else
      others = true;
  }
  return casts;
}

void ReloadWithNodes(Graph& graph, onnx::ModelProto model, google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  model.mutable_graph()->mutable_node()->Swap(&nodes);
  Graph rewritten = LoadModelProto(std::move(model), graph.source_path());
  rewritten.set_conversion(graph.conversion());
  graph = std::move(rewritten);
}

std::string QdqWriter::Node(const std::string& op, const std::string& base, const std::vector<std::string>& inputs,
                            const std::string& output, std::optional<std::int64_t> axis) {
  onnx::NodeProto& n = *nodes_.Add();
  n.set_op_type(op);
  n.set_name(fresh_.Fresh(base + "_" + op));
  for (const std::string& in : inputs) n.add_input(in);
  const std::string out = output.empty() ? fresh_.Fresh(base) : output;
  n.add_output(out);
  if (axis) *n.add_attribute() = IntAttribute("axis", *axis);
  return out;
}

std::string QdqWriter::Initializer(const std::string& base, onnx::TensorProto tensor) {
  tensor.set_name(fresh_.Fresh(base));
  *model_.mutable_graph()->add_initializer() = tensor;
  return tensor.name();
}

}  // namespace onnxfuse
