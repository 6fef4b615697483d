// Pattern regions (src/fuse/pattern_regions.cc): the library's Gelu,
// LayerNormalization and squeeze-and-excitation matches recorded on a postdom
// or greedy plan, whatever groups hold their nodes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "fuse/greedy_fuser.h"
#include "fuse/pattern_fuser.h"
#include "fuse/pattern_regions.h"
#include "fuse/postdom_fuser.h"
#include "patterns/pattern.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

const std::vector<Pattern>& Library() {
  static const std::vector<Pattern> library = LoadPatternDir(BuiltinPatternDir());
  return library;
}


// The producers of `outputs`, by value name.
std::vector<NodeId> Producers(const Graph& graph, const std::vector<std::string>& outputs) {
  std::vector<NodeId> nodes;
  for (const std::string& name : outputs) nodes.push_back(graph.value(*graph.FindValue(name)).producer);
  return nodes;
}

std::vector<PatternRegion> AllRegions(const FusionPlan& plan) {
  std::vector<PatternRegion> regions;
  for (const FusedGroup& g : plan.groups) regions.insert(regions.end(), g.regions.begin(), g.regions.end());
  return regions;
}

}  // namespace

TEST_CASE("a Gelu in either operand order is a region, other constants or an escaping intermediate are not",
          "[pattern_regions]") {
  const Graph graph = test::GraphFromText(test::kGeluVariants);
  for (bool greedy : {false, true}) {
    INFO((greedy ? "greedy" : "postdom"));
    FusionPlan plan = greedy ? FuseGreedy(graph, {}) : FuseByPostDominator(graph, {});
    AnnotatePatternRegions(graph, plan, Library());
    const std::vector<PatternRegion> regions = AllRegions(plan);
    REQUIRE(regions.size() == 2);
    for (const PatternRegion& r : regions) CHECK(r.pattern == "Gelu");
    // Body order, Constants left out: they match values, not nodes.
    CHECK(regions[0].nodes == Producers(graph, {"q", "e", "e1", "p", "y"}));
    CHECK(regions[1].nodes == Producers(graph, {"qw", "ew", "e1w", "pw", "yw"}));
    // On the group of its first node.
    for (const FusedGroup& g : plan.groups)
      for (const PatternRegion& r : g.regions) CHECK(plan.group_of[r.nodes.front()] == g.id);
  }
}

TEST_CASE("a region may span several groups, and annotating again replaces the regions", "[pattern_regions]") {
  const Graph graph = test::GraphFromText(test::kGeluVariants);
  // Every node a group of its own.
  std::vector<int> label(graph.num_nodes());
  for (std::size_t i = 0; i < label.size(); ++i) label[i] = static_cast<int>(i);
  FusionPlan plan = MakeFusionPlan(graph, ClassifyAll(graph), label, std::vector<std::string>(label.size()), "postdom");
  AnnotatePatternRegions(graph, plan, Library());
  AnnotatePatternRegions(graph, plan, Library());
  const std::vector<PatternRegion> regions = AllRegions(plan);
  REQUIRE(regions.size() == 2);
  CHECK(regions[0].nodes.size() == 5);
}

TEST_CASE("nodes of a group a pattern fused are not annotated again", "[pattern_regions]") {
  const Graph graph = test::GraphFromText(test::kGeluVariants);
  FusionPlan plan = FuseByPatterns(graph, Library(), {});
  AnnotatePatternRegions(graph, plan, Library());
  CHECK(AllRegions(plan).empty());
}

TEST_CASE("only the patterns of single ops become regions", "[pattern_regions]") {
  // x -> MatMul -> Add(bias) -> Relu: MatMulAdd matches, but fusing a Linear
  // layer is the strategy's choice; no region.
  const Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4] x, float[4,4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, float[4] b = {1,2,3,4}) => (float[2,4] y) {
  m = MatMul (x, w)
  a = Add (m, b)
  y = Relu (a)
}
)");
  FusionPlan plan = FuseByPostDominator(graph, {});
  AnnotatePatternRegions(graph, plan, Library());
  CHECK(AllRegions(plan).empty());
  const std::vector<std::string>& names = RegionPatternNames();
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const std::string& name : names) {
    INFO(name);
    CHECK(std::any_of(Library().begin(), Library().end(), [&](const Pattern& p) { return p.function.name() == name; }));
  }
}
