#include "write/onnx_writer.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "write/function_builder.h"
#include "write/pattern_calls.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

constexpr std::int64_t kFunctionsIrVersion = 8;  // model-local functions arrived in IR version 8

// Groups in a topological order of the quotient graph, smallest id first among
// the ready ones. Ordering by first member alone is not enough: with A -> C and
// B -> C, where A and B are independent, the convex group {A, C} comes first by
// its first member A but reads B's output.
std::vector<int> GroupOrder(const Graph& graph, const FusionPlan& plan) {
  const std::size_t n = plan.groups.size();
  std::vector<std::set<int>> successors(n);
  std::vector<int> pending(n, 0);
  for (NodeId id = 0; id < graph.num_nodes(); ++id)
    for (NodeId consumer : graph.Consumers(id)) {
      const int from = plan.group_of[id], to = plan.group_of[consumer];
      if (from != to && successors[static_cast<std::size_t>(from)].insert(to).second)
        ++pending[static_cast<std::size_t>(to)];
    }
  std::set<int> ready;
  for (std::size_t g = 0; g < n; ++g)
    if (pending[g] == 0) ready.insert(static_cast<int>(g));
  std::vector<int> order;
  while (!ready.empty()) {
    const int g = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(g);
    for (int s : successors[static_cast<std::size_t>(g)])
      if (--pending[static_cast<std::size_t>(s)] == 0) ready.insert(s);
  }
  Check(order.size() == n, "the groups of the fusion plan form a cycle");
  return order;
}

std::string UniqueNodeName(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (int suffix = 2; !taken.insert(name).second; ++suffix) name = base + "_" + std::to_string(suffix);
  return name;
}

// The call node of a fused group: original value names outside, so the rest of
// the graph is untouched; the original member names in its doc_string.
onnx::NodeProto CallNode(const Graph& graph, const FusionPlan& plan, const FusedGroup& group,
                         const detail::FunctionCall& call, std::unordered_set<std::string>& node_names) {
  onnx::NodeProto node;
  node.set_op_type(call.function);
  node.set_domain(kFusedDomain);
  node.set_name(UniqueNodeName("fused_" + std::to_string(group.id) + "_" + graph.node(group.nodes.front()).name,
                               node_names));
  for (ValueId v : GroupInputs(graph, group)) node.add_input(graph.value(v).name);
  for (ValueId v : GroupOutputs(graph, plan, group)) node.add_output(graph.value(v).name);
  for (const auto& attribute : call.attributes) *node.add_attribute() = attribute;
  std::string members;
  for (NodeId id : group.nodes) members += (members.empty() ? "" : ", ") + graph.node(id).name;
  node.set_doc_string("onnx-fuse group " + std::to_string(group.id) +
                      (group.rule.empty() ? "" : " (" + group.rule + ")") + ": " + members);
  return node;
}

// What shape inference reads of a model: everything but the bulk of the
// initializers' data (their types and dims are kept, and small tensors whole,
// since shape inference may read a Reshape target). Copying 100 MB of weights
// only to infer shapes cost ResNet-50 a third of its write time.
onnx::ModelProto InferenceSkeleton(const onnx::ModelProto& model) {
  constexpr int kSmallTensorElements = 64;
  onnx::ModelProto skeleton;
  skeleton.set_ir_version(model.ir_version());
  *skeleton.mutable_opset_import() = model.opset_import();
  *skeleton.mutable_functions() = model.functions();
  const onnx::GraphProto& source = model.graph();
  onnx::GraphProto& graph = *skeleton.mutable_graph();
  graph.set_name(source.name());
  *graph.mutable_node() = source.node();
  *graph.mutable_input() = source.input();
  *graph.mutable_output() = source.output();
  *graph.mutable_value_info() = source.value_info();
  for (const auto& tensor : source.initializer()) {
    std::int64_t elements = 1;
    for (auto d : tensor.dims()) elements *= d;
    if (elements <= kSmallTensorElements) {
      *graph.add_initializer() = tensor;
      continue;
    }
    auto* stub = graph.add_initializer();
    stub->set_name(tensor.name());
    stub->set_data_type(tensor.data_type());
    *stub->mutable_dims() = tensor.dims();
  }
  return skeleton;
}

}  // namespace

FusedModel BuildFusedModel(const Graph& graph, const FusionPlan& plan) {
  ValidateFusionPlan(graph, plan);
  for (std::size_t g = 0; g < plan.groups.size(); ++g)
    Check(plan.groups[g].id == static_cast<int>(g), "group ids are their index in the plan");

  // Names of functions an earlier run defined, so new ones do not clash.
  std::set<std::string> taken;
  for (const auto& f : graph.model().functions())
    if (f.domain() == kFusedDomain) taken.insert(f.name());
  // Pattern groups call the pattern's own function (pattern_calls.h).
  detail::PatternCalls pattern_calls = detail::BuildPatternCalls(graph, plan);
  for (const auto& f : pattern_calls.functions) taken.insert(f.name());
  detail::FunctionSet functions = detail::BuildFunctions(graph, plan, std::move(taken));

  FusedModel result;
  onnx::ModelProto& model = result.model;
  // Everything but nodes and value_info is kept as loaded: names, metadata,
  // producer, inputs, outputs, initializers, existing functions.
  model = graph.model();
  model.set_ir_version(std::max<std::int64_t>(model.ir_version(), kFunctionsIrVersion));
  onnx::GraphProto& out = *model.mutable_graph();
  out.clear_node();

  std::unordered_set<std::string> node_names;
  for (const auto& node : graph.nodes()) node_names.insert(node.name);
  std::unordered_set<std::string> internal;  // values now hidden inside a function
  result.function_of_group.assign(plan.groups.size(), "");
  for (int g : GroupOrder(graph, plan)) {
    const FusedGroup& group = plan.groups[static_cast<std::size_t>(g)];
    const detail::FunctionCall& call = functions.calls[static_cast<std::size_t>(g)];
    if (group.call) {
      const std::string& function = pattern_calls.function_of_group[static_cast<std::size_t>(g)];
      result.function_of_group[static_cast<std::size_t>(g)] = function;
      *out.add_node() = detail::PatternCallNode(
          graph, group, function,
          UniqueNodeName("fused_" + std::to_string(group.id) + "_" + graph.node(group.nodes.front()).name, node_names));
    } else if (call.function.empty()) {
      for (NodeId id : group.nodes) *out.add_node() = graph.node(id).proto;
      continue;
    } else {
      result.function_of_group[static_cast<std::size_t>(g)] = call.function;
      *out.add_node() = CallNode(graph, plan, group, call, node_names);
    }
    const auto outputs = GroupOutputs(graph, plan, group);
    for (NodeId id : group.nodes)
      for (ValueId v : graph.node(id).outputs)
        if (v != kNoValue && std::find(outputs.begin(), outputs.end(), v) == outputs.end())
          internal.insert(graph.value(v).name);
  }

  auto& value_info = *out.mutable_value_info();
  value_info.erase(std::remove_if(value_info.begin(), value_info.end(),
                                  [&](const onnx::ValueInfoProto& vi) { return internal.count(vi.name()) > 0; }),
                   value_info.end());

  for (auto& f : pattern_calls.functions) *model.add_functions() = std::move(f);
  if (!functions.functions.empty() || !pattern_calls.functions.empty()) {
    for (auto& f : functions.functions) *model.add_functions() = std::move(f);
    const bool imported = std::any_of(model.opset_import().begin(), model.opset_import().end(),
                                      [](const onnx::OperatorSetIdProto& o) { return o.domain() == kFusedDomain; });
    if (!imported) {
      auto* opset = model.add_opset_import();
      opset->set_domain(kFusedDomain);
      opset->set_version(1);
    }
  }
  return result;
}

void CheckFusedModel(const onnx::ModelProto& model) {
  // libonnx 1.12's C++ check_model has no full_check flag; Python's full_check
  // is check_model followed by strict, type-checking shape inference, which is
  // what this does. check_model checks each function body (node schemas in the
  // function's opsets, names defined before use, default-domain opset equal to
  // the model's); the inference enters model-local functions, binding
  // ref_attr_name to the call's attributes. Neither checks a call against its
  // function (a missing attribute silently takes the operator's default in
  // inference, an unknown custom op passes), so CheckFunctionCalls does.
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto skeleton = InferenceSkeleton(model);
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(skeleton, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
    throw Error(ErrorKind::kInternal, "the written model fails the ONNX checker: " + message);
  }
  CheckFunctionCalls(model, ErrorKind::kInternal, "internal error: ");
}

}  // namespace onnxfuse
