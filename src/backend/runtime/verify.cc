// The fused plan checked against the unfused one, and a difference localized
// to the first fusion group whose result differs (onnxfuse/verify.h).
#include "backend/runtime/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "backend/runtime/verify_graphs.h"
#include "eval/host_eval.h"
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

// The values leaving `group` (GroupOutputs) that can be compared: float or
// integer (indices and masks, compared exactly; another group may read them),
// of known, non-empty shape.
std::vector<ValueId> LeavingValues(const Graph& graph, const FusionPlan& plan, const FusedGroup& group) {
  std::vector<ValueId> leaving;
  for (ValueId v : GroupOutputs(graph, plan, group)) {
    const TensorType& type = graph.value(v).type;
    const auto elements = type.NumElements();
    const std::int32_t storage = StorageTypeOf(type.elem_type);
    if ((storage == onnx::TensorProto::FLOAT || storage == onnx::TensorProto::INT64) && type.elem_type != 0 &&
        elements && *elements > 0)
      leaving.push_back(v);
  }
  return leaving;
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

// `group` recomputed on the host evaluator (eval/host_eval.h: every node in
// double precision, rounded once to its output type) from the values one
// plan gave its inputs: graph inputs, constants, and what other groups
// computed (`kept`). nullopt when a node is not host-evaluable, an input is
// not at hand, or the evaluator refuses.
std::optional<std::map<std::string, Tensor>> Recompute(const Graph& graph, const FusedGroup& group,
                                                       const std::map<std::string, Tensor>& kept,
                                                       const std::map<std::string, const Tensor*>& graph_inputs) {
  std::map<std::string, Tensor> computed;
  std::deque<Tensor> constants;  // read by pointer while the group is evaluated
  for (NodeId id : group.nodes) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() || !eval::HostEvaluable(node)) return std::nullopt;
    std::vector<const Tensor*> in;
    for (std::size_t slot = 0; slot < node.num_explicit_inputs && slot < node.inputs.size(); ++slot) {
      const ValueId v = node.inputs[slot];
      if (v == kNoValue) {
        in.push_back(nullptr);
        continue;
      }
      const std::string& name = graph.value(v).name;
      if (auto it = computed.find(name); it != computed.end()) in.push_back(&it->second);
      else if (auto k = kept.find(name); k != kept.end()) in.push_back(&k->second);
      else if (auto g = graph_inputs.find(name); g != graph_inputs.end()) in.push_back(g->second);
      else if (const onnx::TensorProto* c = graph.IsConstant(v) ? graph.ConstantTensor(v) : nullptr) {
        constants.push_back(TensorFromProto(*c, name));
        in.push_back(&constants.back());
      } else {
        return std::nullopt;
      }
    }
    std::vector<Tensor> out;
    try {
      out = eval::EvalAsDeclared(graph, node, in);
    } catch (const Error&) {
      return std::nullopt;
    }
    for (std::size_t k = 0; k < node.outputs.size() && k < out.size(); ++k) {
      if (node.outputs[k] == kNoValue) continue;
      const std::string& name = graph.value(node.outputs[k]).name;
      out[k].name = name;
      computed[name] = std::move(out[k]);
    }
  }
  return computed;
}

// Whether `group`, whose result differs between the plans, only carries on
// what its inputs differ by: each plan's result agrees with the group
// recomputed from that plan's own inputs (Recompute), within `rtol`. A Sub
// whose operands nearly cancel magnifies a last-bit difference in them to
// its whole result, and no plan is wrong for it. A group lowered wrongly
// disagrees with its recomputation in the plan that lowered it so.
bool CarriesInputDifference(const Graph& graph, const FusedGroup& group, const std::vector<ValueId>& leaving,
                            const std::map<std::string, Tensor>& fused, const std::map<std::string, Tensor>& unfused,
                            const std::map<std::string, const Tensor*>& graph_inputs, double rtol) {
  for (const std::map<std::string, Tensor>* plan : {&fused, &unfused}) {
    const auto recomputed = Recompute(graph, group, *plan, graph_inputs);
    if (!recomputed) return false;
    for (ValueId v : leaving) {
      const std::string& name = graph.value(v).name;
      auto r = recomputed->find(name);
      if (r == recomputed->end() || !Agree(r->second, CompareTensors(r->second, plan->at(name)), rtol)) return false;
    }
  }
  return true;
}

GroupDifference DifferenceAt(const Graph& graph, const FusionPlan& plan, int group_id, ValueId v, const TensorDiff& d) {
  const FusedGroup& group = plan.groups.at(static_cast<std::size_t>(group_id));
  GroupDifference difference;
  difference.group = group_id;
  difference.function = FunctionOf(graph, group);
  for (NodeId id : group.nodes) difference.nodes += (difference.nodes.empty() ? "" : ",") + graph.node(id).name;
  difference.node = graph.node(graph.value(v).producer).name;
  difference.value = graph.value(v).name;
  difference.max_abs = d.max_abs, difference.max_rel = d.max_rel;
  return difference;
}

// Compares the two plans group by group (every value leaving a group kept as
// an output). Each group whose result differs either carries on what its
// inputs differ by (CarriesInputDifference: kept in result.carried) or is
// where the difference is made (result.first, and the comparison stops).
// When every differing group only carries a difference on, the outputs
// differ by the graph's conditioning alone and the verification passes.
void Localize(const Graph& graph, const FusionPlan& plan, const std::vector<Tensor>& inputs, double rtol,
              Verification& result) {
  std::vector<std::vector<ValueId>> leaving;  // per group, in plan.groups order
  std::vector<ValueId> values;
  for (const FusedGroup& group : plan.groups) {
    leaving.push_back(LeavingValues(graph, plan, group));
    values.insert(values.end(), leaving.back().begin(), leaving.back().end());
  }
  std::map<std::string, Tensor> fused, unfused;
  try {
    std::tie(fused, unfused) = RunBoth(WithOutputs(graph, values), plan, inputs, !result.without_fake_quantization);
  } catch (const Error& e) {
    result.localization_note = std::string("not localized: keeping every group's result failed to compile: ") + e.what();
    return;
  }
  std::map<std::string, const Tensor*> graph_inputs;
  for (const Tensor& t : inputs) graph_inputs[t.name] = &t;
  for (const FusedGroup& group : plan.groups) {
    const std::vector<ValueId>& group_leaving = leaving.at(static_cast<std::size_t>(group.id));
    std::optional<GroupDifference> worst;
    for (ValueId v : group_leaving) {
      const std::string& name = graph.value(v).name;
      const TensorDiff d = CompareTensors(unfused.at(name), fused.at(name));
      if (!Agree(unfused.at(name), d, rtol) && (!worst || d.max_rel > worst->max_rel))
        worst = DifferenceAt(graph, plan, group.id, v, d);
    }
    if (!worst) continue;
    // Without fake quantization the plans ran each QuantizeLinear ->
    // DequantizeLinear pair as the identity, which the evaluator does not.
    const bool recomputable = !result.without_fake_quantization ||
                              std::none_of(group.nodes.begin(), group.nodes.end(), [&](NodeId id) {
                                return graph.node(id).op_type.find("Quantize") != std::string::npos;
                              });
    if (recomputable && CarriesInputDifference(graph, group, group_leaving, fused, unfused, graph_inputs, rtol)) {
      result.carried.push_back(std::move(*worst));
      continue;
    }
    result.first = std::move(worst);
    return;
  }
  if (!result.carried.empty()) {
    result.ok = true;  // the quantized activations, compared after this, may still fail it
    return;
  }
  result.localization_note =
      "not localized: with every group's result kept, all of them agree (the difference depends on a buffer "
      "reused in place)";
}

QuantizedCheck CompareInSteps(const std::string& name, const QuantizedActivation& activation, const Tensor& unfused,
                              const Tensor& fused) {
  QuantizedCheck check;
  check.value = name;
  check.elements = unfused.NumElements();
  if (unfused.dims != fused.dims || unfused.data.size() != fused.data.size()) {
    check.max_steps = std::numeric_limits<double>::infinity(), check.share_over_one_step = 1, check.ok = false;
    return check;
  }
  const std::vector<float>& scale = activation.scale;
  const auto inner = static_cast<std::size_t>(activation.inner);
  std::int64_t over_one = 0;
  for (std::size_t i = 0; i < unfused.data.size(); ++i) {
    const float step = scale[scale.size() == 1 ? 0 : (i / inner) % scale.size()];
    // Both values are (q - zero_point) * scale: their difference is a whole number of steps.
    double steps = std::round(std::fabs(static_cast<double>(fused.data[i]) - unfused.data[i]) / step);
    if (std::isnan(steps)) steps = std::numeric_limits<double>::infinity();
    check.max_steps = std::max(check.max_steps, steps);
    over_one += steps > 1;
  }
  check.share_over_one_step = check.elements ? static_cast<double>(over_one) / static_cast<double>(check.elements) : 0;
  check.ok = check.max_steps <= kMaxSteps && check.share_over_one_step <= kMaxShareOverOneStep;
  return check;
}

// Each layer between quantized activations, run by the fused plan on the
// unfused plan's integers (verify_graphs.h, CutAtQuantizedActivations): the
// unfused plan of the model gives every activation; the fused plan of the
// graph cut at them reads those back and computes each one again.
void CompareQuantized(const Graph& graph, const FusionPlan& plan, const std::vector<Tensor>& inputs,
                      Verification& result) {
  const std::vector<QuantizedActivation> activations = QuantizedActivations(graph);
  if (activations.empty()) return;
  try {
    std::vector<ValueId> kept;
    for (const QuantizedActivation& a : activations) kept.push_back(a.dequantized);
    std::map<std::string, Tensor> reference;
    for (Tensor& t : ExecutablePlan::Compile(WithOutputs(graph, kept), plan, CompileOptions{false}).Run(inputs))
      reference[t.name] = std::move(t);
    const CutGraph cut = CutAtQuantizedActivations(graph, plan, activations);
    std::vector<Tensor> cut_inputs = inputs;
    for (std::size_t i = 0; i < activations.size(); ++i) {
      cut_inputs.push_back(reference.at(graph.value(activations[i].dequantized).name));
      cut_inputs.back().name = cut.reference_inputs[i];
    }
    // The unfused plan of the cut graph would compute each activation again
    // from the same integers, node for node as above: the reference is it.
    std::map<std::string, Tensor> fused;
    for (Tensor& t : ExecutablePlan::Compile(cut.graph, cut.plan, CompileOptions{true}).Run(cut_inputs))
      fused[t.name] = std::move(t);
    for (std::size_t i = 0; i < activations.size(); ++i) {
      const Tensor& expected = reference.at(graph.value(activations[i].dequantized).name);
      result.quantized.push_back(CompareInSteps(graph.value(graph.node(activations[i].quantize).outputs[0]).name,
                                                activations[i], expected, fused.at(cut.checked_outputs[i])));
      result.ok &= result.quantized.back().ok;
    }
  } catch (const Error& e) {
    result.quantized_note = std::string("the quantized activations were not compared: ") + e.what();
    result.ok = false;
  }
}

}  // namespace

std::string Verification::Summary() const {
  const std::string without =
      without_fake_quantization ? " (compiled without fake quantization: each QuantizeLinear -> DequantizeLinear pair as the identity)" : "";
  std::string line;
  const auto add = [&line](const std::string& part) { line += (line.empty() ? "" : "; ") + part; };
  for (const OutputCheck& o : outputs)
    if (!o.ok) add("output '" + o.output + "' differs (max abs " + Scientific(o.max_abs) + ", max rel " + Scientific(o.max_rel) + ")");
  const auto group_text = [](const GroupDifference& g) {
    return "group " + std::to_string(g.group) + " (" + g.function + ": " + g.nodes + ") at node '" + g.node +
           "' (value '" + g.value + "', max rel " + Scientific(g.max_rel) + ")";
  };
  std::string carried_groups;
  for (const GroupDifference& g : carried) carried_groups += (carried_groups.empty() ? "" : ", ") + group_text(g);
  if (first) {
    add("first differing " + group_text(*first));
    if (!carried.empty()) add("before it, differing only as their inputs do: " + carried_groups);
  } else if (!carried.empty()) {
    add("the graph's conditioning: each plan's result of " + carried_groups +
        " equals the host evaluator's float64 recomputation from that plan's own inputs, which differ within " +
        "the tolerance");
  } else if (!localization_note.empty()) {
    add(localization_note);
  }
  line = line.empty() ? "fused and unfused outputs agree" + without : line + without;
  // The quantized activations: the first that differs (each is computed from the same integers in both plans).
  const auto differing = std::count_if(quantized.begin(), quantized.end(), [](const QuantizedCheck& q) { return !q.ok; });
  for (const QuantizedCheck& q : quantized) {
    if (q.ok || q.value.empty()) continue;
    add("quantized activation '" + q.value + "'" +
        (differing > 1 ? " (the first of " + std::to_string(differing) + " that differ)" : std::string()) +
        " differs by up to " + Scientific(q.max_steps) + " steps, " + Scientific(100 * q.share_over_one_step) +
        "% of its elements by more than one");
    break;
  }
  if (!quantized_note.empty()) add(quantized_note);
  if (!quantized.empty() && differing == 0) {
    const QuantizedCheck worst = WorstQuantized();
    add("the " + std::to_string(quantized.size()) + " quantized activations agree (at most " +
        Scientific(worst.max_steps) + " steps apart, at most " + Scientific(100 * worst.share_over_one_step) +
        "% of a tensor by more than one)");
  }
  return line;
}

QuantizedCheck Verification::WorstQuantized() const {
  QuantizedCheck worst;
  worst.ok = quantized_note.empty();
  for (const QuantizedCheck& q : quantized) {
    worst.elements += q.elements;
    worst.max_steps = std::max(worst.max_steps, q.max_steps);
    worst.share_over_one_step = std::max(worst.share_over_one_step, q.share_over_one_step);
    worst.ok &= q.ok;
  }
  return worst;
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
  if (result.without_fake_quantization) CompareQuantized(graph, plan, inputs, result);
  return result;
}

}  // namespace onnxfuse
