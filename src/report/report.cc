#include "report/report.h"

#include <map>
#include <set>

namespace onnxfuse {

namespace {

using nlohmann::json;

json ModelSummary(const Graph& graph, const std::vector<OpPatternKind>& kinds) {
  std::map<std::string, int> ops, kind_counts;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    ++ops[node.domain.empty() ? node.op_type : node.domain + "." + node.op_type];
    ++kind_counts[std::string(ToString(kinds[id]))];
  }
  json inputs = json::array(), outputs = json::array();
  for (ValueId v : graph.inputs())
    inputs.push_back({{"name", graph.value(v).name}, {"shape", graph.value(v).type.ShapeString()}});
  for (ValueId v : graph.outputs())
    outputs.push_back({{"name", graph.value(v).name}, {"shape", graph.value(v).type.ShapeString()}});
  const auto& model = graph.model();
  return {{"path", graph.source_path()},
          {"ir_version", model.ir_version()},
          {"opset", graph.opset()},
          {"producer", model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version())},
          {"node_count", graph.num_nodes()},
          {"initializers", model.graph().initializer_size()},
          {"inputs", inputs},
          {"outputs", outputs},
          {"op_histogram", ops},
          {"kind_histogram", kind_counts}};
}

// Values produced and consumed inside the group only: with fusion they need
// never be written to memory.
std::vector<ValueId> InternalValues(const Graph& graph, const FusionPlan& plan, const FusedGroup& group) {
  std::vector<ValueId> internal;
  for (ValueId v : GroupProducedValues(graph, group))
    if (!graph.value(v).consumers.empty() && !LeavesGroup(graph, plan, group, v)) internal.push_back(v);
  return internal;
}

std::vector<std::string> Names(const Graph& graph, const std::vector<ValueId>& values) {
  std::vector<std::string> names;
  for (ValueId v : values) names.push_back(graph.value(v).name);
  return names;
}

std::vector<std::string> NodeNames(const Graph& graph, const std::vector<NodeId>& nodes) {
  std::vector<std::string> names;
  for (NodeId id : nodes) names.push_back(graph.node(id).name);
  return names;
}

}  // namespace

nlohmann::json BuildReport(const Graph& graph, const std::vector<OpPatternKind>& kinds, const FusionPlan& plan,
                           const std::vector<std::string>& function_of_group, const StageTimes& times) {
  json groups = json::array();
  std::int64_t bytes_eliminated = 0, tensors_eliminated = 0, unknown_size_tensors = 0, fused_nodes = 0;
  for (const auto& group : plan.groups) {
    if (group.nodes.size() < 2) continue;
    json members = json::array(), op_types = json::array(), member_kinds = json::array();
    for (NodeId id : group.nodes) {
      members.push_back(graph.node(id).name);
      op_types.push_back(graph.node(id).op_type);
      member_kinds.push_back(ToString(kinds[id]));
    }
    std::int64_t group_bytes = 0;
    auto internal = InternalValues(graph, plan, group);
    for (ValueId v : internal) {
      if (auto size = graph.value(v).type.SizeInBytes()) group_bytes += *size;
      else ++unknown_size_tensors;
    }
    bytes_eliminated += group_bytes;
    tensors_eliminated += static_cast<std::int64_t>(internal.size());
    fused_nodes += static_cast<std::int64_t>(group.nodes.size());
    const std::string& function =
        static_cast<std::size_t>(group.id) < function_of_group.size() ? function_of_group[group.id] : "";
    groups.push_back({{"id", group.id},
                      {"function", function},
                      {"nodes", members},
                      {"op_types", op_types},
                      {"pattern_kinds", member_kinds},
                      {"pattern_kind", ToString(group.pattern)},
                      {"anchor", group.anchor == kNoNode ? json(nullptr) : json(graph.node(group.anchor).name)},
                      {"rule", group.rule},
                      {"inputs", Names(graph, GroupInputs(graph, group))},
                      {"outputs", Names(graph, GroupOutputs(graph, plan, group))},
                      {"intermediate_tensors_eliminated", internal.size()},
                      {"intermediate_bytes_eliminated", group_bytes}});
  }

  json not_fused = json::array();
  std::set<NodeId> explained;
  for (const auto& r : plan.rejections) {
    const Node& node = graph.node(r.node);
    explained.insert(r.node);
    not_fused.push_back({{"node", node.name},
                         {"op_type", node.op_type},
                         {"pattern_kind", ToString(kinds[r.node])},
                         {"group", plan.group_of[r.node]},
                         {"target", r.target == kNoNode ? json(nullptr) : json(graph.node(r.target).name)},
                         {"reason", r.reason},
                         {"detail", r.detail}});
  }
  // A fuser that left a node alone without saying why is still accounted for.
  for (const auto& group : plan.groups) {
    if (group.nodes.size() != 1 || explained.count(group.nodes[0])) continue;
    const Node& node = graph.node(group.nodes[0]);
    not_fused.push_back({{"node", node.name},
                         {"op_type", node.op_type},
                         {"pattern_kind", ToString(kinds[group.nodes[0]])},
                         {"group", group.id},
                         {"target", nullptr},
                         {"reason", "no_candidate"},
                         {"detail", "no fusion rule of strategy '" + plan.strategy + "' applies to " + node.name}});
  }

  const std::int64_t fused_groups = static_cast<std::int64_t>(groups.size());
  // Constant nodes are data, not work: a group made only of them launches no kernel.
  std::int64_t kernels_after = 0, constant_nodes = 0;
  for (const auto& group : plan.groups) {
    bool all_constant = true;
    for (NodeId id : group.nodes) {
      bool constant = graph.node(id).op_type == "Constant" && graph.node(id).domain.empty();
      constant_nodes += constant;
      all_constant = all_constant && constant;
    }
    kernels_after += !all_constant;
  }
  json totals = {{"nodes_before", graph.num_nodes()},
                 {"constant_nodes", constant_nodes},
                 {"kernels_after", kernels_after},
                 {"fused_groups", fused_groups},
                 {"nodes_in_fused_groups", fused_nodes},
                 {"intermediate_tensors_eliminated", tensors_eliminated},
                 {"intermediate_bytes_eliminated", bytes_eliminated},
                 {"intermediate_tensors_of_unknown_size", unknown_size_tensors},
                 {"not_fused_entries", not_fused.size()}};
  json patterns = json::array();
  for (const auto& outcome : plan.pattern_outcomes) {
    json near_misses = json::array();
    for (const auto& miss : outcome.near_misses)
      near_misses.push_back({{"anchor", graph.node(miss.node).name},
                             {"node", miss.target == kNoNode ? json(nullptr) : json(graph.node(miss.target).name)},
                             {"reason", miss.reason},
                             {"detail", miss.detail}});
    patterns.push_back({{"pattern", outcome.pattern},
                        {"file", outcome.file},
                        {"benefit", outcome.benefit},
                        {"matches", outcome.groups.size()},
                        {"groups", outcome.groups},
                        {"near_misses", near_misses}});
  }

  // What the library found inside the groups of postdom and greedy plans.
  json regions = json::array();
  for (const auto& group : plan.groups)
    for (const PatternRegion& region : group.regions) {
      std::set<int> holding;
      for (NodeId id : region.nodes) holding.insert(plan.group_of[id]);
      regions.push_back({{"pattern", region.pattern},
                         {"nodes", NodeNames(graph, region.nodes)},
                         {"groups", std::vector<int>(holding.begin(), holding.end())}});
    }

  json timings = {{"load", times.load_ms},
                  {"classify", times.classify_ms},
                  {"fuse", times.fuse_ms},
                  {"build", times.build_ms},
                  {"check", times.check_ms},
                  {"save", times.save_ms},
                  {"write", times.build_ms + times.check_ms + times.save_ms},
                  {"total", times.load_ms + times.classify_ms + times.fuse_ms + times.build_ms + times.check_ms +
                                times.save_ms}};
  const OpsetConversion& c = graph.conversion();
  json converted = json::array();
  for (const auto& n : c.nodes) converted.push_back({{"node", n.node}, {"op_type", n.op_type}, {"adapter", n.adapter}});
  json conversion = {{"from", {{"opset", c.from_opset}, {"ir_version", c.from_ir}}},
                     {"to", {{"opset", c.to_opset}, {"ir_version", c.to_ir}}},
                     {"converted", c.Converted()},
                     {"nodes", converted}};
  return {{"schema_version", kReportSchemaVersion},
          {"tool", {{"name", "onnx-fuse"}, {"version", ONNXFUSE_VERSION}}},
          {"strategy", plan.strategy},
          {"model", ModelSummary(graph, kinds)},
          {"conversion", conversion},
          {"groups", groups},
          {"not_fused", not_fused},
          {"patterns", patterns},
          {"pattern_regions", regions},
          {"totals", totals},
          {"timings_ms", timings}};
}

}  // namespace onnxfuse
