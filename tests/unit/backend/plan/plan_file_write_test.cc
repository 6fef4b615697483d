// Writing plan files (src/backend/plan/plan_file_write.cc): atomically, and
// with the payload the plan file's layout promises (the model, the groups, the
// schedule as compiled, every prepacked constant with its descriptor).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "backend/plan/plan_file.h"
#include "onnxfuse_plan.pb.h"
#include "plan_file_bytes.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

TEST_CASE("the plan file is replaced atomically and never half-written", "[plan_file]") {
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const fs::path path = dir.path / "block.plan";
  std::ofstream(path) << "previous";
  WritePlanFile(path.string(), graph, test::FusePostdom(graph), CompileOptions{}, "block.onnx");
  CHECK(IsPlanFile(path.string()));
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) files += entry.is_regular_file();
  CHECK(files == 1);  // no temporary file left
}

TEST_CASE("the written payload holds the model, the groups, the schedule as compiled and every constant",
          "[plan_file]") {
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = test::FusePostdom(graph);
  const std::vector<ScheduleStep> compiled = ExecutablePlan::Compile(graph, fusion).Schedule();
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "unfused"));
    const fs::path path = dir.path / (fused ? "fused.plan" : "unfused.plan");
    const PlanFileInfo info = WritePlanFile(path.string(), graph, fusion, CompileOptions{fused}, "block.onnx");
    const std::string bytes = test::FileContents(path);
    CHECK(info.file_bytes == bytes.size());
    CHECK(bytes.compare(0, 8, "ONNXFPLN") == 0);
    const planfile::Plan plan = test::Payload(bytes);
    CHECK(plan.source() == "block.onnx");
    CHECK(info.source == "block.onnx");
    CHECK(plan.producer().rfind("onnx-fuse ", 0) == 0);
    CHECK(plan.fused() == fused);
    CHECK(plan.strategy() == fusion.strategy);
    CHECK(plan.cpu_isa() == CpuIsaName());
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(plan.model()));
    CHECK(model.graph().node_size() == static_cast<int>(graph.num_nodes()));

    // The groups, member by member (an unfused plan stores none: one node per step).
    REQUIRE(plan.groups_size() == (fused ? static_cast<int>(fusion.groups.size()) : 0));
    for (int g = 0; g < plan.groups_size(); ++g) {
      const FusedGroup& group = fusion.groups[static_cast<std::size_t>(g)];
      CHECK(plan.groups(g).rule() == group.rule);
      CHECK(plan.groups(g).pattern() == group.pattern_name);  // "": postdom groups come from no pattern
      CHECK(std::vector<NodeId>(plan.groups(g).nodes().begin(), plan.groups(g).nodes().end()) == group.nodes);
    }
    // The schedule, as the same compilation gives it.
    CHECK(info.steps == plan.schedule_size());
    if (fused) {
      REQUIRE(plan.schedule_size() == static_cast<int>(compiled.size()));
      for (int s = 0; s < plan.schedule_size(); ++s) {
        const ScheduleStep& step = compiled[static_cast<std::size_t>(s)];
        CHECK(plan.schedule(s).kind() == step.kind);
        CHECK(plan.schedule(s).label() == step.label);
        CHECK(plan.schedule(s).impl() == step.impl);
        CHECK(plan.schedule(s).layout() == step.layout);
      }
    }
    // Every constant once, with as many bytes as its descriptor's 4-byte elements.
    CHECK(info.constants == plan.constants_size());
    CHECK(plan.constants_size() >= 4);  // two convolutions' weights and biases
    std::set<std::string> keys;
    for (const auto& c : plan.constants()) {
      INFO(c.key());
      CHECK(keys.insert(c.key()).second);
      std::int64_t elements = 1;
      for (std::int64_t d : c.desc().padded_dims()) elements *= d;
      CHECK(c.data().size() == static_cast<std::size_t>(elements) * 4);
    }
  }
}
