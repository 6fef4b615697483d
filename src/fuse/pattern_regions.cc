// Recording library pattern matches on a postdom or greedy plan (pattern_regions.h).
#include "fuse/pattern_regions.h"

#include <algorithm>

#include "fuse/pattern_fuser.h"

namespace onnxfuse {

const std::vector<std::string>& RegionPatternNames() {
  // The ops whose decomposition runs as one kernel; fusing what surrounds them
  // stays the fuser's choice.
  static const std::vector<std::string> names = {"Gelu",          "LayerNormalization", "SEReluHardSigmoid",
                                                 "SEReluSigmoid", "SESiLUHardSigmoid",  "SESiLUSigmoid"};
  return names;
}

void AnnotatePatternRegions(const Graph& graph, FusionPlan& plan, const std::vector<Pattern>& patterns) {
  for (FusedGroup& group : plan.groups) group.regions.clear();
  const std::vector<std::string>& names = RegionPatternNames();
  // A group a pattern fused is that pattern's already (a plan file's pattern groups).
  std::vector<bool> claimed(graph.num_nodes(), false);
  for (const FusedGroup& group : plan.groups)
    if (!group.pattern_name.empty())
      for (NodeId id : group.nodes) claimed[id] = true;
  for (std::size_t index : PatternPriorityOrder(patterns)) {
    const Pattern& pattern = patterns[index];
    if (!std::binary_search(names.begin(), names.end(), pattern.function.name())) continue;
    for (NodeId anchor = 0; anchor < graph.num_nodes(); ++anchor) {
      if (claimed[anchor]) continue;
      MatchOutcome result = MatchPattern(graph, pattern, anchor, claimed);
      if (!result.match || result.match->nodes.empty()) continue;
      for (NodeId id : result.match->nodes) claimed[id] = true;
      const NodeId first = result.match->nodes.front();
      FusedGroup& group = plan.groups.at(static_cast<std::size_t>(plan.group_of.at(first)));
      group.regions.push_back({pattern.function.name(), std::move(result.match->nodes)});
    }
  }
}

}  // namespace onnxfuse
