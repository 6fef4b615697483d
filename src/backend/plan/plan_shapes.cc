// A plan's model at input shapes (plan_shapes.h).
#include "backend/plan/plan_shapes.h"

#include <algorithm>
#include <utility>

#include "onnxfuse/error.h"
#include "load/loader.h"
#include "load/shape_model.h"
#include "backend/plan/plan_file.h"

namespace onnxfuse::planshapes {

namespace {

bool Open(const TensorType& type) {
  return !type.has_shape || std::any_of(type.dims.begin(), type.dims.end(), [](std::int64_t d) { return d < 0; });
}

// The declared dims' symbols of a graph input of the stored model ("" where none).
std::vector<std::string> SymbolsOf(const onnx::ValueInfoProto& input) {
  std::vector<std::string> symbols;
  if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) return symbols;
  for (const auto& dim : input.type().tensor_type().shape().dim())
    symbols.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  return symbols;
}

}  // namespace

Shapes BuiltShapes(const Graph& graph) {
  Shapes shapes;
  for (ValueId v : graph.inputs()) {
    const Value& value = graph.value(v);
    if (!value.type.has_shape) continue;
    std::vector<std::int64_t> dims = value.type.dims;
    for (std::int64_t& d : dims) d = d >= 0 ? d : 1;
    shapes[value.name] = std::move(dims);
  }
  return shapes;
}

bool HasOpenDims(const Graph& graph) {
  return std::any_of(graph.inputs().begin(), graph.inputs().end(),
                     [&](ValueId v) { return Open(graph.value(v).type); });
}

Shapes ShapesToCompile(const onnx::GraphProto& graph, const Shapes& built, const Shapes& requested) {
  std::map<std::string, std::pair<std::int64_t, std::string>> symbols;  // symbol -> value, the input giving it
  for (const auto& input : graph.input()) {
    auto it = requested.find(input.name());
    if (it == requested.end()) continue;
    const std::vector<std::string> names = SymbolsOf(input);
    for (std::size_t i = 0; i < names.size() && i < it->second.size(); ++i) {
      if (names[i].empty()) continue;
      auto [known, inserted] = symbols.emplace(names[i], std::make_pair(it->second[i], input.name()));
      if (!inserted && known->second.first != it->second[i])
        throw Error(ErrorKind::kUsage, "--input-shape " + input.name() + " gives dim '" + names[i] + "' the value " +
                                           std::to_string(it->second[i]) + ", --input-shape " + known->second.second +
                                           " gave it " + std::to_string(known->second.first));
    }
  }
  Shapes pins = requested;
  for (const auto& input : graph.input()) {
    auto it = built.find(input.name());
    if (it == built.end() || requested.count(input.name())) continue;
    std::vector<std::int64_t> dims = it->second;
    const std::vector<std::string> names = SymbolsOf(input);
    for (std::size_t i = 0; i < names.size() && i < dims.size(); ++i)
      if (auto s = symbols.find(names[i]); !names[i].empty() && s != symbols.end()) dims[i] = s->second.first;
    pins[input.name()] = std::move(dims);
  }
  return pins;
}

FusionPlan GroupsFromLabels(const Graph& graph, const std::vector<int>& label, const std::vector<GroupLabel>& groups,
                            const std::string& strategy, const std::string& source) {
  if (groups.empty()) return FusionPlan{};  // an unfused plan
  if (label.size() != graph.num_nodes())
    throw Error(ErrorKind::kInvalidModel, source + ": plan groups cover " + std::to_string(label.size()) +
                                              " nodes, the model has " + std::to_string(graph.num_nodes()));
  for (std::size_t id = 0; id < label.size(); ++id)
    if (label[id] < 0 || static_cast<std::size_t>(label[id]) >= groups.size())
      throw Error(ErrorKind::kInvalidModel, source + ": plan groups leave out node " + std::to_string(id));
  std::vector<std::string> rules;
  for (const GroupLabel& g : groups) rules.push_back(g.rule);
  FusionPlan fusion = MakeFusionPlan(graph, ClassifyAll(graph), label, rules, strategy);
  for (FusedGroup& group : fusion.groups)  // its pattern is that of the stored group its members came from
    group.pattern_name = groups.at(static_cast<std::size_t>(label[group.nodes.front()])).pattern;
  for (const GroupLabel& g : groups)
    for (const PatternRegion& region : g.regions) {
      for (NodeId id : region.nodes)
        if (id >= graph.num_nodes())
          throw Error(ErrorKind::kInvalidModel, source + ": pattern region " + region.pattern + " names node " +
                                                    std::to_string(id) + " out of range");
      if (region.nodes.empty()) continue;
      fusion.groups[static_cast<std::size_t>(fusion.group_of[region.nodes.front()])].regions.push_back(region);
    }
  try {
    ValidateFusionPlan(graph, fusion);
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidModel, source + ": plan groups are not a valid fusion: " + e.what());
  }
  return fusion;
}

FusionPlan SameGroupsOn(const Graph& graph, const FusionPlan& fusion) {
  std::vector<int> label;
  std::vector<GroupLabel> groups;
  for (const FusedGroup& group : fusion.groups) {
    for (NodeId id : group.nodes) {
      if (id >= label.size()) label.resize(id + 1, -1);
      label[id] = static_cast<int>(groups.size());
    }
    groups.push_back({group.rule, group.pattern_name, group.regions});
  }
  return GroupsFromLabels(graph, label, groups, fusion.strategy, graph.source_path());
}

}  // namespace onnxfuse::planshapes

namespace onnxfuse {

PlanGraph PlanModelAt(const ShapeModel& model, const FusionPlan& groups,
                      const std::map<std::string, std::vector<std::int64_t>>& input_shapes) {
  PlanGraph out;
  out.graph = std::make_unique<Graph>(model.At(input_shapes));
  out.fusion = planshapes::SameGroupsOn(*out.graph, groups);
  return out;
}

}  // namespace onnxfuse
