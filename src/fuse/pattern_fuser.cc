#include "fuse/pattern_fuser.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "onnxfuse/error.h"
#include "fuse/postdom_fuser.h"

namespace onnxfuse {

namespace {

const onnx::NodeProto& LastBodyNode(const Pattern& pattern) {
  Check(pattern.function.node_size() > 0, "pattern " + pattern.function.name() + " has a body");
  return pattern.function.node(pattern.function.node_size() - 1);
}

bool SameOp(const Node& node, const onnx::NodeProto& body_node) {
  std::string domain = body_node.domain() == "ai.onnx" ? "" : body_node.domain();
  return node.op_type == body_node.op_type() && node.domain == domain;
}

// A near-miss worth a line in the report: not at a node another pattern took,
// and not an op mismatch right at the anchor's input (every Relu after an Add
// "nearly" matches Conv+BN+Relu; listing those would bury the real ones).
bool IsInformative(const Graph& graph, NodeId anchor, const PatternNearMiss& miss) {
  if (miss.reason == "already_fused") return false;
  // The anchor's own inputs are not the pattern's kind (an Add of a bias initializer).
  if ((miss.reason == "op_mismatch" || miss.reason == "input_mismatch") && miss.node == anchor) return false;
  if (miss.reason == "op_mismatch" && miss.node != kNoNode) {
    auto consumers = graph.Consumers(miss.node);
    if (std::find(consumers.begin(), consumers.end(), anchor) != consumers.end()) return false;
  }
  return true;
}

}  // namespace

std::vector<std::size_t> PatternPriorityOrder(const std::vector<Pattern>& patterns) {
  std::vector<std::size_t> order(patterns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Pattern& pa = patterns[a];
    const Pattern& pb = patterns[b];
    if (pa.benefit != pb.benefit) return pa.benefit > pb.benefit;
    if (pa.function.node_size() != pb.function.node_size()) return pa.function.node_size() > pb.function.node_size();
    return pa.function.name() < pb.function.name();
  });
  return order;
}

FusionPlan FuseByPatterns(const Graph& graph, const std::vector<Pattern>& patterns, const FuserOptions& options) {
  const std::size_t n = graph.num_nodes();
  std::vector<bool> claimed(n, false);
  std::vector<std::string> claimed_by(n);  // pattern name per claimed node
  struct Found {
    std::size_t pattern;
    PatternMatch match;
  };
  std::vector<Found> found;
  std::vector<PatternOutcome> outcomes;

  for (std::size_t index : PatternPriorityOrder(patterns)) {
    const Pattern& pattern = patterns[index];
    PatternOutcome outcome;
    outcome.pattern = pattern.function.name();
    outcome.file = pattern.file;
    outcome.benefit = pattern.benefit;
    const onnx::NodeProto& last = LastBodyNode(pattern);
    for (NodeId anchor = 0; anchor < n; ++anchor) {
      if (claimed[anchor] || !SameOp(graph.node(anchor), last)) continue;
      MatchOutcome result = MatchPattern(graph, pattern, anchor, claimed);
      if (result.match) {
        if (static_cast<int>(result.match->nodes.size()) > options.max_group_size) {
          outcome.near_misses.push_back({anchor, anchor, "group_size_limit",
                                         "a match of " + std::to_string(result.match->nodes.size()) +
                                             " nodes exceeds --max-group-size"});
          continue;
        }
        for (NodeId id : result.match->nodes) {
          claimed[id] = true;
          claimed_by[id] = pattern.function.name();
        }
        found.push_back({index, std::move(*result.match)});
        continue;
      }
      if (result.near_miss && IsInformative(graph, anchor, *result.near_miss))
        outcome.near_misses.push_back(
            {anchor, result.near_miss->node, result.near_miss->reason, result.near_miss->detail});
    }
    outcomes.push_back(std::move(outcome));
  }

  // A near-miss at an anchor that a later match of the same pattern took
  // explains nothing (an SE block's inner SiLU Mul "nearly" is the gate Mul).
  // One at an anchor a lower-priority pattern took stays: it says why the
  // bigger fusion did not happen.
  for (auto& outcome : outcomes) {
    auto& misses = outcome.near_misses;
    misses.erase(std::remove_if(misses.begin(), misses.end(),
                                [&](const Rejection& r) { return claimed_by[r.node] == outcome.pattern; }),
                 misses.end());
  }

  // The rest: TVM's FuseOps, with pattern groups opaque to it.
  std::vector<OpPatternKind> kinds = ClassifyAll(graph);
  std::vector<OpPatternKind> residual_kinds = kinds;
  for (NodeId id = 0; id < n; ++id)
    if (claimed[id]) residual_kinds[id] = OpPatternKind::kOpaque;
  FusionPlan residual = FuseByPostDominator(graph, options, residual_kinds);

  // Labels: postdom groups keep their ids; pattern matches get ids after them.
  std::vector<int> label(n);
  std::vector<std::string> rules;
  for (const auto& group : residual.groups) rules.push_back(group.rule);
  for (NodeId id = 0; id < n; ++id) label[id] = residual.group_of[id];
  for (std::size_t m = 0; m < found.size(); ++m) {
    int match_label = static_cast<int>(residual.groups.size() + m);
    for (NodeId id : found[m].match.nodes) label[id] = match_label;
    rules.push_back("pattern:" + patterns[found[m].pattern].function.name());
  }
  FusionPlan plan = MakeFusionPlan(graph, kinds, label, rules, "pattern");

  // Each pattern group is written as a call of the pattern's own function.
  std::map<std::string, bool> function_added;
  std::map<std::string, std::size_t> outcome_of;
  for (std::size_t i = 0; i < outcomes.size(); ++i) outcome_of[outcomes[i].pattern] = i;
  for (auto& f : found) {
    const Pattern& pattern = patterns[f.pattern];
    FusedGroup& group = plan.groups[static_cast<std::size_t>(plan.group_of[f.match.nodes.front()])];
    group.rule = "pattern:" + pattern.function.name();  // also for a one-node pattern
    group.call = PatternCall{pattern.function.name(), f.match.inputs, f.match.outputs, f.match.attributes};
    group.pattern_name = pattern.function.name();
    if (!function_added[pattern.function.name()]) {
      plan.functions.push_back(pattern.function);
      function_added[pattern.function.name()] = true;
    }
    outcomes[outcome_of[pattern.function.name()]].groups.push_back(group.id);
  }
  for (auto& outcome : outcomes) std::sort(outcome.groups.begin(), outcome.groups.end());
  plan.pattern_outcomes = std::move(outcomes);

  // Rejections: postdom's, except for nodes a pattern fused (postdom saw them as opaque).
  for (const auto& r : residual.rejections)
    if (!claimed[r.node]) plan.rejections.push_back(r);
  ValidateFusionPlan(graph, plan);
  return plan;
}

}  // namespace onnxfuse
