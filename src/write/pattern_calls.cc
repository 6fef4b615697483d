#include "write/pattern_calls.h"

#include <algorithm>
#include <map>

#include "onnxfuse/error.h"
#include "write/onnx_writer.h"

namespace onnxfuse::detail {

namespace {

onnx::FunctionProto ForModelOpset(onnx::FunctionProto function, std::int64_t model_opset) {
  bool found = false;
  for (auto& opset : *function.mutable_opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      opset.set_domain("");
      opset.set_version(model_opset);
      found = true;
    }
  if (!found) function.add_opset_import()->set_version(model_opset);
  return function;
}

// The function without the inputs this call omits (see the header).
onnx::FunctionProto WithoutOmittedInputs(const onnx::FunctionProto& function, const PatternCall& call) {
  std::vector<std::string> omitted;
  for (int i = 0; i < function.input_size(); ++i)
    if (call.inputs[static_cast<std::size_t>(i)] == kNoValue) omitted.push_back(function.input(i));
  if (omitted.empty()) return function;
  onnx::FunctionProto variant = function;
  std::string name = function.name() + "_no";
  for (const auto& input : omitted) name += "_" + input;
  variant.set_name(name);
  variant.clear_input();
  for (const auto& input : function.input())
    if (std::find(omitted.begin(), omitted.end(), input) == omitted.end()) variant.add_input(input);
  for (auto& node : *variant.mutable_node())
    for (auto& input : *node.mutable_input())
      if (std::find(omitted.begin(), omitted.end(), input) != omitted.end()) input.clear();
  return variant;
}

}  // namespace

PatternCalls BuildPatternCalls(const Graph& graph, const FusionPlan& plan) {
  std::map<std::string, const onnx::FunctionProto*> pattern_of;
  for (const auto& f : plan.functions) pattern_of[f.name()] = &f;
  std::map<std::string, onnx::FunctionProto> chosen;  // by name: each written once
  PatternCalls result;
  result.function_of_group.assign(plan.groups.size(), "");
  for (const auto& group : plan.groups) {
    if (!group.call) continue;
    auto it = pattern_of.find(group.call->function);
    Check(it != pattern_of.end(), "plan.functions defines pattern " + group.call->function);
    Check(group.call->inputs.size() == static_cast<std::size_t>(it->second->input_size()),
          "a call of " + group.call->function + " binds every function input");
    onnx::FunctionProto function = ForModelOpset(WithoutOmittedInputs(*it->second, *group.call), graph.opset());
    result.function_of_group[static_cast<std::size_t>(group.id)] = function.name();
    chosen.emplace(function.name(), std::move(function));
  }
  for (auto& [name, function] : chosen) {
    const auto& existing = graph.model().functions();
    auto same = std::find_if(existing.begin(), existing.end(), [&name = name](const onnx::FunctionProto& e) {
      return e.domain() == kFusedDomain && e.name() == name;  // (C++17: a binding is captured by an init-capture)
    });
    if (same == existing.end()) result.functions.push_back(std::move(function));
    else if (same->SerializeAsString() != function.SerializeAsString())
      throw Error(ErrorKind::kUnsupported, graph.source_path() + ": the model already defines a different function " +
                                               std::string(kFusedDomain) + "." + name);
  }
  return result;
}

onnx::NodeProto PatternCallNode(const Graph& graph, const FusedGroup& group, const std::string& function,
                                const std::string& node_name) {
  const PatternCall& call = *group.call;
  onnx::NodeProto node;
  node.set_op_type(function);
  node.set_domain(kFusedDomain);
  node.set_name(node_name);
  for (ValueId v : call.inputs)
    if (v != kNoValue) node.add_input(graph.value(v).name);
  for (ValueId v : call.outputs) node.add_output(graph.value(v).name);
  for (const auto& attribute : call.attributes) *node.add_attribute() = attribute;
  std::string members;
  for (NodeId id : group.nodes) members += (members.empty() ? "" : ", ") + graph.node(id).name;
  node.set_doc_string("onnx-fuse group " + std::to_string(group.id) + " (" + group.rule + "): " + members);
  return node;
}

}  // namespace onnxfuse::detail
