#include "rewrite/dynamic_quantize_as_float.h"

#include <set>

#include "ir/attributes.h"
#include "rewrite/qdq_writer.h"

namespace onnxfuse {

namespace {

std::string Scalar(QdqWriter& w, const std::string& base, float value) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  return w.Initializer(base, t);
}

// Writes node `node`'s float form; `y_casts` and `z_casts` are the Casts to
// float of its y and y_zero_point, whose outputs it gives.
void WriteFloatForm(const Graph& graph, const Node& node, const std::vector<NodeId>& y_casts,
                    const std::vector<NodeId>& z_casts, bool z_read_as_is, QdqWriter& w) {
  const std::string x = graph.value(node.inputs[0]).name, base = node.name;
  const std::string zero = Scalar(w, base + "_zero", 0.0f), one = Scalar(w, base + "_one", 1.0f),
                    top = Scalar(w, base + "_255", 255.0f);
  auto reduce = [&](const char* op) {
    const std::string out = w.Node(op, base + "_" + op, {x});
    *w.Last().add_attribute() = IntAttribute("keepdims", 0);
    return out;
  };
  const std::string low = w.Node("Min", base + "_low", {reduce("ReduceMin"), zero});
  const std::string high = w.Node("Max", base + "_high", {reduce("ReduceMax"), zero});
  const std::string range = w.Node("Sub", base + "_range", {high, low});
  const std::string all_zero = w.Node("Equal", base + "_all_zero", {range, zero});
  const std::string scale = w.Node("Where", base + "_scale",
                                   {all_zero, one, w.Node("Div", base + "_step", {range, top})},
                                   graph.value(node.outputs[1]).name);
  const std::string z = w.Node("Clip", base + "_z", {w.Node("Round", base + "_z_round",
                                                            {w.Node("Div", base + "_z_div",
                                                                    {w.Node("Neg", base + "_minus_low", {low}), scale})}),
                                                     zero, top});
  for (NodeId cast : z_casts) w.Node("Identity", base + "_z_float", {z}, graph.value(graph.node(cast).outputs[0]).name);
  if (z_read_as_is) {
    w.Node("Cast", base + "_z_uint8", {z}, graph.value(node.outputs[2]).name);
    *w.Last().add_attribute() = IntAttribute("to", onnx::TensorProto::UINT8);
  }
  // saturate(round(x / scale) + z) = Min (Max (round(x / scale), -z), 255 - z) + z.
  const std::string rounded = w.Node("Round", base + "_round", {w.Node("Div", base + "_div", {x, scale})});
  const std::string floor = w.Node("Neg", base + "_minus_z", {z}), ceiling = w.Node("Sub", base + "_ceiling", {top, z});
  const std::string clipped = w.Node("Min", base + "_clipped", {w.Node("Max", base + "_floor", {rounded, floor}), ceiling});
  const std::string y = w.Node("Add", base + "_y", {clipped, z}, graph.value(graph.node(y_casts[0]).outputs[0]).name);
  for (std::size_t i = 1; i < y_casts.size(); ++i)
    w.Node("Identity", base + "_y_float", {y}, graph.value(graph.node(y_casts[i]).outputs[0]).name);
}

}  // namespace

DynamicQuantizeRewrite ExpressDynamicQuantizeAsFloat(Graph& graph) {
  DynamicQuantizeRewrite result;
  std::set<NodeId> candidates;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() || node.op_type != "DynamicQuantizeLinear" || node.outputs.size() != 3) continue;
    bool others = false;
    if (!FloatCastReaders(graph, node.outputs[0], others).empty() && !others) candidates.insert(id);
  }
  if (candidates.empty()) return result;
  onnx::ModelProto model = graph.model();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  QdqWriter writer(model, nodes);
  std::set<NodeId> skipped;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (skipped.count(id)) continue;
    const Node& node = graph.node(id);
    if (!candidates.count(id)) {
      *nodes.Add() = model.graph().node(static_cast<int>(id));
      continue;
    }
    bool y_others = false, z_others = false;
    const std::vector<NodeId> y_casts = FloatCastReaders(graph, node.outputs[0], y_others);
    const std::vector<NodeId> z_casts = FloatCastReaders(graph, node.outputs[2], z_others);
    WriteFloatForm(graph, node, y_casts, z_casts, z_others, writer);
    skipped.insert(y_casts.begin(), y_casts.end());
    skipped.insert(z_casts.begin(), z_casts.end());
    result.rewritten.push_back(node.name);
  }
  ReloadWithNodes(graph, std::move(model), nodes);
  return result;
}

}  // namespace onnxfuse
