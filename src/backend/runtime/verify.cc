// The fused plan checked against the unfused one, and a difference localized
// to the first fusion group whose result differs (onnxfuse/verify.h).
#include "backend/runtime/verify.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "ir/fake_quantization.h"

namespace onnxfuse {

namespace {

// Two results agree: same shape and type, and float values within `rtol`
// (relative to the reference's largest magnitude); integer and bool values
// (indices, masks, counts) exactly, as no rounding can explain a difference.
bool Agree(const Tensor& reference, const TensorDiff& d, double rtol) {
  if (d.shape_mismatch) return false;
  return reference.elem_type == onnx::TensorProto::INT64 ? d.max_abs == 0 : d.max_rel <= rtol;
}

std::string Scientific(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", v);
  return text;
}

std::string FunctionOf(const Graph& graph, const FusedGroup& group) {
  if (group.call) return group.call->function;
  std::string name;
  for (NodeId id : group.nodes) name += (name.empty() ? "" : "_") + graph.node(id).op_type;
  return name;
}

// The values leaving `group` (GroupOutputs) that can be compared: float, of known, non-empty shape.
std::vector<ValueId> LeavingValues(const Graph& graph, const FusionPlan& plan, const FusedGroup& group) {
  std::vector<ValueId> leaving;
  for (ValueId v : GroupOutputs(graph, plan, group)) {
    const TensorType& type = graph.value(v).type;
    const auto elements = type.NumElements();
    if (type.elem_type == onnx::TensorProto::FLOAT && elements && *elements > 0) leaving.push_back(v);
  }
  return leaving;
}

// `graph` with `values` added to its outputs (same nodes, so the same node ids).
Graph WithOutputs(const Graph& graph, const std::vector<ValueId>& values) {
  onnx::ModelProto model = graph.model();
  for (ValueId v : values) {
    const Value& value = graph.value(v);
    if (value.is_graph_output) continue;
    onnx::ValueInfoProto* info = model.mutable_graph()->add_output();
    info->set_name(value.name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(value.type.elem_type);
    for (std::int64_t d : value.type.dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  }
  return Graph(std::move(model), graph.source_path());
}

// Compiles and runs `graph` fused with `plan` and unfused; the outputs of each, by name.
std::pair<std::map<std::string, Tensor>, std::map<std::string, Tensor>> RunBoth(const Graph& graph,
                                                                              const FusionPlan& plan,
                                                                              const std::vector<Tensor>& inputs,
                                                                              bool fake_quantize) {
  std::pair<std::map<std::string, Tensor>, std::map<std::string, Tensor>> outputs;
  for (bool fuse : {true, false}) {
    CompileOptions options{fuse};
    options.fake_quantize = fake_quantize;
    ExecutablePlan executable = ExecutablePlan::Compile(graph, plan, options);
    for (Tensor& t : executable.Run(inputs)) (fuse ? outputs.first : outputs.second)[t.name] = std::move(t);
  }
  return outputs;
}

void Localize(const Graph& graph, const FusionPlan& plan, const std::vector<Tensor>& inputs, double rtol,
              Verification& result) {
  std::vector<std::pair<int, ValueId>> leaving;  // group id, value: in the groups' order
  std::vector<ValueId> values;
  for (const FusedGroup& group : plan.groups)
    for (ValueId v : LeavingValues(graph, plan, group)) leaving.emplace_back(group.id, v), values.push_back(v);
  std::map<std::string, Tensor> fused, unfused;
  try {
    std::tie(fused, unfused) = RunBoth(WithOutputs(graph, values), plan, inputs, !result.without_fake_quantization);
  } catch (const Error& e) {
    result.localization_note = std::string("not localized: keeping every group's result failed to compile: ") + e.what();
    return;
  }
  for (const auto& [group_id, v] : leaving) {
    const std::string& name = graph.value(v).name;
    TensorDiff d = CompareTensors(unfused.at(name), fused.at(name));
    if (Agree(unfused.at(name), d, rtol)) continue;
    const FusedGroup& group = plan.groups.at(static_cast<std::size_t>(group_id));
    GroupDifference first;
    first.group = group_id;
    first.function = FunctionOf(graph, group);
    for (NodeId id : group.nodes) first.nodes += (first.nodes.empty() ? "" : ",") + graph.node(id).name;
    first.node = graph.node(graph.value(v).producer).name;
    first.value = name;
    first.max_abs = d.max_abs, first.max_rel = d.max_rel;
    result.first = std::move(first);
    return;
  }
  result.localization_note =
      "not localized: with every group's result kept, all of them agree (the difference depends on a buffer "
      "reused in place)";
}

}  // namespace

std::string Verification::Summary() const {
  const std::string without =
      without_fake_quantization ? " (compiled without fake quantization: each QuantizeLinear -> DequantizeLinear pair as the identity)" : "";
  if (ok) return "fused and unfused outputs agree" + without;
  std::string line;
  for (const OutputCheck& o : outputs)
    if (!o.ok)
      line += std::string(line.empty() ? "" : "; ") + "output '" + o.output + "' differs (max abs " +
              Scientific(o.max_abs) + ", max rel " + Scientific(o.max_rel) + ")";
  if (first)
    line += "; first differing group " + std::to_string(first->group) + " (" + first->function + ": " +
            first->nodes + ") at node '" + first->node + "' (value '" + first->value + "', max rel " +
            Scientific(first->max_rel) + ")";
  else if (!localization_note.empty())
    line += "; " + localization_note;
  return line + without;
}

Verification VerifyOutputs(const Graph& graph, const FusionPlan& plan, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& fused, const std::vector<Tensor>& unfused, double rtol) {
  Verification result;
  Check(fused.size() == unfused.size(), "VerifyOutputs: the plans give different numbers of outputs");
  std::vector<Tensor> fused_float, unfused_float;  // without fake quantization, in graph-output order
  if (HasFakeQuantization(graph)) {
    result.without_fake_quantization = true;
    auto [f, u] = RunBoth(graph, plan, inputs, false);
    for (ValueId v : graph.outputs()) {
      fused_float.push_back(std::move(f.at(graph.value(v).name)));
      unfused_float.push_back(std::move(u.at(graph.value(v).name)));
    }
  }
  const std::vector<Tensor>& fused_out = result.without_fake_quantization ? fused_float : fused;
  const std::vector<Tensor>& unfused_out = result.without_fake_quantization ? unfused_float : unfused;
  for (std::size_t i = 0; i < unfused_out.size(); ++i) {
    TensorDiff d = CompareTensors(unfused_out[i], fused_out[i]);
    OutputCheck check{unfused_out[i].name, d.max_abs, d.max_rel, Agree(unfused_out[i], d, rtol)};
    result.ok &= check.ok;
    result.outputs.push_back(std::move(check));
  }
  if (!result.ok) Localize(graph, plan, inputs, rtol, result);
  return result;
}

}  // namespace onnxfuse
