#include "backend/runtime/verify_graphs.h"

#include <algorithm>
#include <string>
#include <utility>

#include "onnxfuse/error.h"
#include "ir/attributes.h"
#include "ir/fake_quantization.h"
#include "ir/tensor_io.h"

namespace onnxfuse {

namespace {

// Optional input `slot` of `node`, kNoValue when omitted.
ValueId InputOr(const Node& node, std::size_t slot) {
  return slot < node.num_explicit_inputs ? node.inputs[slot] : kNoValue;
}

// Both omitted, the same value, or constants of equal contents.
bool SameConstant(const Graph& graph, ValueId a, ValueId b) {
  if (a == b) return true;
  if (a == kNoValue || b == kNoValue || !graph.IsConstant(a) || !graph.IsConstant(b)) return false;
  const Tensor ta = TensorFromProto(*graph.ConstantTensor(a), graph.value(a).name);
  const Tensor tb = TensorFromProto(*graph.ConstantTensor(b), graph.value(b).name);
  return ta.dims == tb.dims && ta.data == tb.data && ta.int_data == tb.int_data && ta.DataType() == tb.DataType();
}

// `base` plus `suffix`, made unique against the graph's values and `taken`.
std::string FreshName(const Graph& graph, const std::string& base, const std::string& suffix,
                      std::vector<std::string>& taken) {
  std::string name = base + suffix;
  for (int n = 2; graph.FindValue(name) || std::find(taken.begin(), taken.end(), name) != taken.end(); ++n)
    name = base + suffix + "_" + std::to_string(n);
  taken.push_back(name);
  return name;
}

}  // namespace

Graph WithOutputs(const Graph& graph, const std::vector<ValueId>& values) {
  onnx::ModelProto model = graph.model();
  for (ValueId v : values) {
    const Value& value = graph.value(v);
    if (value.is_graph_output) continue;
    *model.mutable_graph()->add_output() = TensorValueInfo(value.name, value.type.elem_type, &value.type.dims);
  }
  return Graph(std::move(model), graph.source_path());
}

std::vector<QuantizedActivation> QuantizedActivations(const Graph& graph) {
  std::vector<QuantizedActivation> found;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& q = graph.node(id);
    const auto readers = DequantizeReaders(graph, q);
    if (!readers || graph.IsConstant(q.inputs.at(0)) || !graph.IsConstant(InputOr(q, 1))) continue;
    const TensorType& type = graph.value(q.outputs[0]).type;
    const auto elements = type.NumElements();
    if (!elements || *elements == 0) continue;
    bool same = true;
    for (const Node* dq : *readers)
      same &= SameConstant(graph, InputOr(*dq, 1), InputOr(q, 1)) && SameConstant(graph, InputOr(*dq, 2), InputOr(q, 2)) &&
              AttrInt(*dq, "axis", 1) == AttrInt(q, "axis", 1);
    if (!same) continue;
    QuantizedActivation a;
    a.quantize = id;
    a.dequantized = readers->front()->outputs.at(0);
    a.scale = TensorFromProto(*graph.ConstantTensor(q.inputs[1]), q.name).data;
    if (a.scale.size() > 1) {  // per axis (QuantizeLinear-13 'axis', default 1)
      const auto rank = static_cast<std::int64_t>(type.dims.size());
      std::int64_t axis = AttrInt(q, "axis", 1);
      if (axis < 0) axis += rank;
      for (std::int64_t d = axis + 1; d < rank; ++d) a.inner *= type.dims[static_cast<std::size_t>(d)];
    }
    found.push_back(std::move(a));
  }
  return found;
}

CutGraph CutAtQuantizedActivations(const Graph& graph, const FusionPlan& plan,
                                   const std::vector<QuantizedActivation>& activations) {
  const onnx::GraphProto& original = graph.model().graph();
  Check(static_cast<std::size_t>(original.node_size()) == graph.num_nodes(),
        "CutAtQuantizedActivations: the graph's nodes are not its model's");
  onnx::ModelProto model = graph.model();
  onnx::GraphProto* g = model.mutable_graph();
  g->clear_node();
  std::vector<std::string> reference_inputs, checked_outputs, taken;
  std::vector<onnx::NodeProto> checks;     // the new DequantizeLinear nodes, placed last
  std::vector<const onnx::NodeProto*> copy_before(graph.num_nodes(), nullptr);
  std::vector<onnx::NodeProto> copies;     // the QuantizeLinear copies, each placed before its original
  copies.reserve(activations.size());
  std::vector<std::string> computed_of(graph.num_nodes());
  for (const QuantizedActivation& a : activations) {
    const Node& q = graph.node(a.quantize);
    const Value& x = graph.value(q.outputs[0]);
    const Value& dequantized = graph.value(a.dequantized);
    const std::string reference = FreshName(graph, dequantized.name, "_reference", taken);
    const std::string computed = FreshName(graph, x.name, "_computed", taken);
    const std::string checked = FreshName(graph, dequantized.name, "_checked", taken);

    onnx::NodeProto copy = q.proto;  // x, now from the reference
    copy.set_name(q.name + "_reference");
    copy.set_input(0, reference);
    copies.push_back(std::move(copy));
    copy_before[a.quantize] = &copies.back();
    computed_of[a.quantize] = computed;  // the model's own QuantizeLinear writes this instead
    onnx::NodeProto dq;
    dq.set_name(q.name + "_checked");
    dq.set_op_type("DequantizeLinear");
    dq.add_input(computed);
    for (int i = 1; i < q.proto.input_size(); ++i) dq.add_input(q.proto.input(i));
    for (const auto& attr : q.proto.attribute())
      if (attr.name() == "axis") *dq.add_attribute() = attr;
    dq.add_output(checked);
    checks.push_back(std::move(dq));

    *g->add_input() = TensorValueInfo(reference, onnx::TensorProto::FLOAT, &x.type.dims);
    *g->add_value_info() = TensorValueInfo(computed, x.type.elem_type, &x.type.dims);
    *g->add_output() = TensorValueInfo(checked, onnx::TensorProto::FLOAT, &x.type.dims);
    reference_inputs.push_back(reference);
    checked_outputs.push_back(checked);
  }
  std::vector<NodeId> moved(graph.num_nodes());  // old node id -> id in the cut graph
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (copy_before[id]) *g->add_node() = *copy_before[id];
    moved[id] = static_cast<NodeId>(g->node_size());
    onnx::NodeProto* n = g->add_node();
    *n = original.node(static_cast<int>(id));
    n->set_name(graph.node(id).name);  // the loader's name for an unnamed node, which its new index would change
    if (!computed_of[id].empty()) n->set_output(0, computed_of[id]);
  }
  for (onnx::NodeProto& n : checks) *g->add_node() = std::move(n);
  Graph cut(std::move(model), graph.source_path());

  // The model's groups on the moved nodes; each new node a group of its own.
  FusionPlan cut_plan;
  if (!plan.groups.empty()) {
    std::vector<int> label(cut.num_nodes(), -1);
    std::vector<std::string> rules;
    for (const FusedGroup& group : plan.groups) {
      for (NodeId id : group.nodes) label[moved[id]] = group.id;
      rules.push_back(group.rule);
    }
    for (int& l : label)
      if (l < 0) l = static_cast<int>(rules.size()), rules.emplace_back();
    cut_plan = MakeFusionPlan(cut, ClassifyAll(cut), label, rules, plan.strategy);
    for (FusedGroup& group : cut_plan.groups) {
      const int from = label[group.nodes.front()];
      if (from >= static_cast<int>(plan.groups.size())) continue;
      const FusedGroup& original_group = plan.groups[static_cast<std::size_t>(from)];
      group.pattern_name = original_group.pattern_name;
      group.regions = original_group.regions;
      for (PatternRegion& region : group.regions)
        for (NodeId& id : region.nodes) id = moved[id];
    }
    ValidateFusionPlan(cut, cut_plan);
  }
  return {std::move(cut), std::move(cut_plan), std::move(reference_inputs), std::move(checked_outputs)};
}

}  // namespace onnxfuse
