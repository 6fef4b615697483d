#include "rewrite/control_flow_decisions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"
#include "rewrite/build_time_values.h"

namespace onnxfuse {

namespace {

using Decision = ControlFlowDecision;

// A declared type that is a sequence, optional or map is no tensor; an absent
// type is (the test models' Loop bodies leave carried values untyped).
bool IsTensorType(const onnx::TypeProto& t) {
  return !t.has_sequence_type() && !t.has_optional_type() && !t.has_map_type() && !t.has_sparse_tensor_type();
}

bool TensorsOnly(const onnx::GraphProto& body) {
  for (const auto& v : body.input())
    if (!IsTensorType(v.type())) return false;
  for (const auto& v : body.output())
    if (!IsTensorType(v.type())) return false;
  return true;
}

const onnx::GraphProto* Body(const Node& node, const std::string& name) {
  const auto* a = FindAttr(node, name);
  return a && a->has_g() ? &a->g() : nullptr;
}

// Whether a constant tensor holds only true (non-zero) elements.
bool AllTrue(const onnx::TensorProto& t) {
  const auto values = DecodeTensor<double>(t, "constant '" + t.name() + "'");
  return !values.empty() && std::all_of(values.begin(), values.end(), [](double v) { return v != 0; });
}

// The body's cond output is its cond input (directly or through Identity) or a
// constant true, of the body or of the enclosing graph (`outer_true`, as torch
// exports it): the loop runs its full trip count.
bool PassesConditionThrough(const onnx::GraphProto& body, const std::function<bool(const std::string&)>& outer_true) {
  if (body.input_size() < 2 || body.output_size() < 1) return false;
  std::string name = body.output(0).name();
  for (int hops = 0; hops <= body.node_size(); ++hops) {
    if (name == body.input(1).name()) return true;
    for (const auto& t : body.initializer())
      if (t.name() == name) return AllTrue(t);
    const onnx::NodeProto* producer = nullptr;
    for (const auto& n : body.node())
      if (std::find(n.output().begin(), n.output().end(), name) != n.output().end()) producer = &n;
    if (!producer) return outer_true(name);
    if (!(producer->domain().empty() || producer->domain() == "ai.onnx")) return false;
    if (producer->op_type() == "Identity" && producer->input_size() == 1) {
      name = producer->input(0);
      continue;
    }
    if (producer->op_type() == "Constant")
      for (const auto& a : producer->attribute())
        if (a.name() == "value" && a.has_t()) return AllTrue(a.t());
    return false;
  }
  return false;
}

// A trip count for messages: an integer as one, anything else (2^63 - 1 as
// double, a fraction) as printf's %g.
std::string CountText(double v) {
  if (std::fabs(v) < 1e15 && v == std::trunc(v)) return std::to_string(static_cast<std::int64_t>(v));
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

Decision Refuse(const Node& node, const std::string& reason, const std::string& why) {
  return {std::nullopt, NodeLabel(node) + ": " + why, reason};
}

// Why `value` is not known at build time; for a graph input, in the words the
// backend uses for an operand it needs as a constant.
std::string NotKnown(const Graph& graph, ValueId id, const std::string& what) {
  const Value& value = graph.value(id);
  if (value.is_graph_input && value.initializer < 0)
    return what + ": input '" + value.name + "' must be a constant known at build time";
  return what + " '" + value.name + "' is computed at run time";
}

class Decider {
 public:
  Decider(const Graph& graph, NameSource& names, const ControlFlowOptions& options)
      : graph_(graph), names_(names), options_(options) {}

  Decision Decide(const Node& node) {
    ExpansionSite site{graph_.opset(), names_, node.name + "/", NodeLabel(node)};
    try {
      if (node.op_type == "If") return DecideIf(node, site);
      if (node.op_type == "Loop") return DecideLoop(node, site);
      return DecideScan(node, site);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUnsupported) throw;
      return {std::nullopt, e.what(), "unsupported_body"};
    }
  }

 private:
  Decision DecideIf(const Node& node, ExpansionSite& site) {
    const auto cond = KnownScalar(graph_, node.inputs.at(0));
    if (!cond && options_.select_run_time_if) return SelectIf(node, site);
    if (!cond)
      return Refuse(node, "condition_not_constant",
                    NotKnown(graph_, node.inputs[0], "its condition") + " (an If decided at run time is not supported)");
    const std::string which = *cond != 0 ? "then_branch" : "else_branch";
    const onnx::GraphProto* branch = Body(node, which);
    if (!branch) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": no " + which + " graph");
    if (!TensorsOnly(*branch)) return Refuse(node, "non_tensor", "its " + which + " gives a sequence or optional value");
    return {InlineBranch(*branch, site), which + " inlined", ""};
  }

  Decision DecideLoop(const Node& node, ExpansionSite& site) {
    const onnx::GraphProto* body = Body(node, "body");
    if (!body) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": no body graph");
    if (!TensorsOnly(*body)) return Refuse(node, "non_tensor", "its body carries a sequence or optional value");
    if (node.num_explicit_inputs < 2 || node.num_explicit_inputs - 2 > node.outputs.size())
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": its inputs do not match its outputs");
    const ValueId m = node.num_explicit_inputs > 0 ? node.inputs[0] : kNoValue;
    const ValueId c = node.num_explicit_inputs > 1 ? node.inputs[1] : kNoValue;
    if (m == kNoValue)
      return Refuse(node, "no_trip_count", "it has no trip count M: it runs until its condition turns false, which is "
                                           "known at run time only");
    const auto trips = KnownScalar(graph_, m);
    if (!trips) return Refuse(node, "trip_count_not_constant", NotKnown(graph_, m, "its trip count"));
    std::optional<double> cond = 1.0;
    if (c != kNoValue) cond = KnownScalar(graph_, c);
    if (!cond) return Refuse(node, "condition_not_constant", NotKnown(graph_, c, "its condition"));
    auto outer_true = [&](const std::string& name) {
      const auto id = graph_.FindValue(name);
      const auto known = id ? KnownValue(graph_, *id) : std::nullopt;
      return known && !known->values.empty() &&
             std::all_of(known->values.begin(), known->values.end(), [](double v) { return v != 0; });
    };
    if (!PassesConditionThrough(*body, outer_true))
      return Refuse(node, "condition_computed_in_body",
                    "its body computes the condition '" + body->output(0).name() + "', so it may stop before M");
    const double count = *cond != 0 ? std::max(*trips, 0.0) : 0.0;
    if (count > static_cast<double>(kMaxIterations))
      return Refuse(node, "too_many_iterations",
                    "its trip count " + CountText(*trips) + " is over the " + std::to_string(kMaxIterations) +
                        " iterations unrolled");
    const auto iterations = static_cast<std::int64_t>(count);
    const std::size_t carried_count = node.num_explicit_inputs - 2, scan_outputs = node.outputs.size() - carried_count;
    CheckArity(node, *body, 2 + carried_count, 1 + carried_count + scan_outputs);
    if (auto refusal = CheckSize(node, iterations, *body, scan_outputs)) return *refusal;
    std::vector<std::string> carried(node.proto.input().begin() + 2, node.proto.input().end());
    return {UnrollLoop(*body, iterations, carried, site), "unrolled " + std::to_string(iterations) + " iterations", ""};
  }

  // Opset 9+: Scan(states..., scan inputs...); opset 8: Scan(sequence_lens, states..., scan inputs...)
  // with a batch axis 0 before everything (Operators.md, Scan-8).
  Decision DecideScan(const Node& node, ExpansionSite& site) {
    const bool batched = graph_.opset() < 9;
    const onnx::GraphProto* body = Body(node, "body");
    if (!body) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": no body graph");
    if (!TensorsOnly(*body)) return Refuse(node, "non_tensor", "its body carries a sequence or optional value");
    if (batched && node.num_explicit_inputs > 0 && node.inputs[0] != kNoValue)
      return Refuse(node, "sequence_lens", "its sequence_lens input (opset-8 Scan) is not unrolled");
    const std::size_t first = batched ? 1 : 0, given = node.num_explicit_inputs - std::min<std::size_t>(first, node.num_explicit_inputs);
    const auto m = static_cast<std::size_t>(AttrInt(node, "num_scan_inputs", 0));
    if (m > given || given - m > node.outputs.size())
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": num_scan_inputs does not match its inputs and outputs");
    const std::size_t n = given - m, k = node.outputs.size() - n;
    CheckArity(node, *body, n + m, n + k);
    ScanShape shape;
    const auto names = node.proto.input().begin() + static_cast<int>(first);
    shape.states.assign(names, names + static_cast<int>(n));
    shape.scan_inputs.assign(names + static_cast<int>(n), node.proto.input().end());
    shape.input_axes = batched ? std::vector<std::int64_t>(m, 0) : AttrInts(node, "scan_input_axes", std::vector<std::int64_t>(m, 0));
    shape.input_reverse = AttrInts(node, batched ? "directions" : "scan_input_directions", std::vector<std::int64_t>(m, 0));
    shape.output_axes = batched ? std::vector<std::int64_t>(k, 0) : AttrInts(node, "scan_output_axes", std::vector<std::int64_t>(k, 0));
    shape.output_reverse = batched ? std::vector<std::int64_t>(k, 0) : AttrInts(node, "scan_output_directions", std::vector<std::int64_t>(k, 0));
    if (shape.input_axes.size() != m || shape.input_reverse.size() != m || shape.output_axes.size() != k ||
        shape.output_reverse.size() != k)
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": its scan axes or directions do not match its inputs and outputs");
    if (m == 0) return Refuse(node, "sequence_length_unknown", "it has no scan input to take its length from");
    shape.length = -1;
    std::int64_t batch = -1;
    for (std::size_t j = 0; j < m; ++j) {
      const Value& x = graph_.value(node.inputs[first + n + j]);
      const auto rank = static_cast<std::int64_t>(x.type.dims.size());
      std::int64_t& axis = shape.input_axes[j];
      if (axis < 0) axis += rank;
      const std::int64_t at = axis + (batched ? 1 : 0);  // the axis in the whole input
      const std::int64_t length = x.type.has_shape && axis >= 0 && at < rank ? x.type.dims[static_cast<std::size_t>(at)] : -1;
      if (length < 0 || (shape.length >= 0 && length != shape.length))
        return Refuse(node, "sequence_length_unknown",
                      "the length of scan input '" + x.name + "' " + x.type.ShapeString() +
                          " along its scan axis is not known at build time (or differs from another scan input's)");
      shape.length = length;
      if (batched) batch = x.type.dims[0];
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (shape.output_axes[j] >= 0) continue;
      const ValueId out = node.outputs[n + j];
      if (out == kNoValue || !graph_.value(out).type.has_shape)
        return Refuse(node, "rank_unknown", "scan output " + std::to_string(j) + " has a negative axis and an unknown rank");
      shape.output_axes[j] += static_cast<std::int64_t>(graph_.value(out).type.dims.size());
    }
    const std::int64_t copies = shape.length * std::max<std::int64_t>(batch, 1);
    if (copies > kMaxIterations)
      return Refuse(node, "too_many_iterations",
                    "its " + std::to_string(copies) + " scan steps are over the " + std::to_string(kMaxIterations) +
                        " iterations unrolled");
    if (auto refusal = CheckSize(node, copies, *body, k)) return *refusal;
    if (batched) {
      if (batch < 1) return Refuse(node, "zero_iterations", "its batch is empty or unknown");
      return {UnrollBatchedScan(*body, shape, batch, site),
              "unrolled " + std::to_string(shape.length) + " iterations for each of " + std::to_string(batch) +
                  " batch items",
              ""};
    }
    return {UnrollScan(*body, shape, site), "unrolled " + std::to_string(shape.length) + " iterations", ""};
  }

  // The body's inputs and outputs are those the node's imply (Operators.md, Loop and Scan).
  static void CheckArity(const Node& node, const onnx::GraphProto& body, std::size_t inputs, std::size_t outputs) {
    if (static_cast<std::size_t>(body.input_size()) != inputs || static_cast<std::size_t>(body.output_size()) != outputs)
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": its body takes " + std::to_string(body.input_size()) +
                                                " inputs and gives " + std::to_string(body.output_size()) +
                                                " outputs; the node implies " + std::to_string(inputs) + " and " +
                                                std::to_string(outputs));
  }

  static std::optional<Decision> CheckSize(const Node& node, std::int64_t iterations, const onnx::GraphProto& body,
                                           std::size_t scan_outputs) {
    if (iterations == 0 && scan_outputs > 0)
      return Refuse(node, "zero_iterations", "it runs no iteration, and the shape of its scan outputs is then unknown");
    const std::int64_t nodes = iterations * CountNodes(body);
    if (nodes > kMaxUnrolledNodes)
      return Refuse(node, "too_large",
                    "unrolled, it would be " + std::to_string(nodes) + " nodes (at most " +
                        std::to_string(kMaxUnrolledNodes) + ")");
    return std::nullopt;
  }

  // An If decided at run time as both branches and a Where per output: the
  // outputs' shapes (as shape inference merged the branches') must be static,
  // so both branches give that shape, and the condition one element of rank
  // no higher than theirs, so Where's broadcasting changes nothing.
  Decision SelectIf(const Node& node, ExpansionSite& site) {
    const onnx::GraphProto* then_branch = Body(node, "then_branch");
    const onnx::GraphProto* else_branch = Body(node, "else_branch");
    if (!then_branch || !else_branch) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": a branch is missing");
    if (!TensorsOnly(*then_branch) || !TensorsOnly(*else_branch))
      return Refuse(node, "non_tensor", "a branch gives a sequence or optional value");
    const TensorType& cond = graph_.value(node.inputs[0]).type;
    const bool one_element = cond.has_shape && cond.NumElements() == 1;
    for (const ValueId out : node.outputs) {
      const TensorType* type = out == kNoValue ? nullptr : &graph_.value(out).type;
      if (!type || !type->NumElements() || type->elem_type == 0 || !one_element || cond.dims.size() > type->dims.size())
        return Refuse(node, "shapes_not_static",
                      "its condition '" + graph_.value(node.inputs[0]).name +
                          "' is computed at run time, and its outputs' shapes are not static (or its condition is "
                          "not one element), so its branches cannot be selected from");
    }
    if (then_branch->output_size() != static_cast<int>(node.outputs.size()) ||
        else_branch->output_size() != static_cast<int>(node.outputs.size()))
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": its branches give other output counts than it has");
    return {SelectBranches(*then_branch, *else_branch, node.proto.input(0), site),
            "both branches, selected by Where at run time", "", /*both_branches=*/true};
  }

  const Graph& graph_;
  NameSource& names_;
  const ControlFlowOptions& options_;
};

}  // namespace

std::int64_t CountNodes(const onnx::GraphProto& g) {
  std::int64_t n = g.node_size();
  for (const auto& node : g.node())
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += CountNodes(a.g());
      for (const auto& sub : a.graphs()) n += CountNodes(sub);
    }
  return n;
}

ControlFlowDecision DecideControlFlow(const Graph& graph, const Node& node, NameSource& names,
                                      const ControlFlowOptions& options) {
  return Decider(graph, names, options).Decide(node);
}

}  // namespace onnxfuse
