// The front door (src/pipeline/prepare_model.cc): what each target does to a
// model with control flow, a function op and BatchNormalization, and the fuse
// step's strategy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "onnxfuse/error.h"
#include "pipeline/prepare_model.h"
#include "temp_dir.h"
#include "test_models.h"

namespace onnxfuse {
namespace {

int Count(const Graph& graph, const std::string& op) {
  const auto& nodes = graph.nodes();
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

std::string Write(const test::TempDir& dir, const std::string& text, const std::string& name = "model.onnx") {
  const std::string path = (dir.path / name).string();
  std::ofstream(path, std::ios::binary) << test::ParseModel(text).SerializeAsString();
  return path;
}

// An If decided at build time (c), one decided at run time (d, an input),
// and MeanVarianceNormalization, a function op.
const char* const kModel = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,3,3] x, bool d) => (float[1,2,3,3] y, float[1,2,3,3] z) {
    c = Constant <value = bool {1}> ()
    a = If (c) <then_branch = then_g () => (float[1,2,3,3] t) { t = Relu (x) },
                else_branch = else_g () => (float[1,2,3,3] e) { e = Neg (x) }>
    y = MeanVarianceNormalization (a)
    z = If (d) <then_branch = then_d () => (float[1,2,3,3] t2) { t2 = Sigmoid (x) },
                else_branch = else_d () => (float[1,2,3,3] e2) { e2 = Tanh (x) }>
  })";

// The backend of these tests: it lowers every default-domain op but MVN.
bool LowersAllButMvn(const std::string& domain, const std::string& op) {
  return domain.empty() && op != "MeanVarianceNormalization";
}

TEST_CASE("PrepareModel for an ONNX model: build-time control flow inlined, run-time If and function ops kept",
          "[pipeline][prepare]") {
  test::TempDir dir("prepare");
  PrepareOptions options;
  options.lowers = LowersAllButMvn;  // not asked for by an ONNX target
  const PreparedModel p = PrepareModel(Write(dir, kModel), options);
  CHECK(Count(*p.graph, "If") == 1);
  CHECK(Count(*p.graph, "Relu") == 1);
  CHECK(Count(*p.graph, "MeanVarianceNormalization") == 1);
  REQUIRE(p.control_flow.expanded.size() == 1);
  REQUIRE(p.control_flow.refused.size() == 1);
  CHECK(p.control_flow.refused[0].reason == "condition_not_constant");
  CHECK(p.functions.expanded.empty());
  CHECK_FALSE(p.bn_folding);
  CHECK(p.fusion.strategy == "pattern");  // kDefaultStrategy
}

TEST_CASE("PrepareModel for an executable: run-time If selected, function ops the backend lacks expanded",
          "[pipeline][prepare]") {
  test::TempDir dir("prepare");
  PrepareOptions options;
  options.target = Target::kExecutable;
  options.lowers = LowersAllButMvn;
  options.fusion.strategy = Strategy::kPostdom;
  const PreparedModel p = PrepareModel(Write(dir, kModel), options);
  CHECK(Count(*p.graph, "If") == 0);
  CHECK(Count(*p.graph, "Where") == 1);  // both branches of If(d), selected per element
  CHECK(Count(*p.graph, "MeanVarianceNormalization") == 0);
  REQUIRE(p.functions.expanded.size() == 1);
  CHECK(p.functions.expanded[0].op_type == "MeanVarianceNormalization");
  CHECK(p.fusion.strategy == "postdom");
  CHECK_NOTHROW(ValidateFusionPlan(*p.graph, p.fusion));

  // Without the backend's predicate nothing is expanded.
  options.lowers = nullptr;
  CHECK(Count(*PrepareModel(Write(dir, kModel), options).graph, "MeanVarianceNormalization") == 1);
}

TEST_CASE("PrepareModel for an executable refuses control flow that stays", "[pipeline][prepare]") {
  test::TempDir dir("prepare");
  const std::string path = Write(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, int64 m) => (float[2] y) {
      t = Constant <value = bool {1}> ()
      y = Loop (m, t, x) <body = body_g (int64 i, bool ci, float[2] v) => (bool co, float[2] vo) {
        co = Identity (ci)
        vo = Relu (v)
      }>
    })");
  PrepareOptions options;
  CHECK(PrepareModel(path, options).control_flow.refused.size() == 1);  // an ONNX model keeps the Loop
  options.target = Target::kExecutable;
  const test::ThrownError e = test::ErrorOf([&] { PrepareModel(path, options); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::Contains("node 'Loop_1' (Loop): its trip count"));
}

TEST_CASE("PrepareModel folds BatchNormalization when asked, and fuses only when asked", "[pipeline][prepare]") {
  test::TempDir dir("prepare");
  const std::string path = Write(dir, test::kBasicBlock);
  PrepareOptions options;
  options.fold_bn = true;
  options.fuse = false;
  const PreparedModel p = PrepareModel(path, options);
  REQUIRE(p.bn_folding);
  CHECK_FALSE(p.bn_folding->folded.empty());
  CHECK(Count(*p.graph, "BatchNormalization") == 0);
  CHECK(p.fusion.groups.empty());

  // The fuse step alone gives the front door's groups.
  options.fuse = true;
  for (Strategy s : {Strategy::kPattern, Strategy::kPostdom, Strategy::kGreedy}) {
    options.fusion.strategy = s;
    const PreparedModel fused = PrepareModel(path, options);
    CHECK(fused.fusion.strategy == StrategyName(s));
    FuseSettings settings;
    settings.strategy = s;
    CHECK(FuseGraph(*fused.graph, settings).groups.size() == fused.fusion.groups.size());
  }
}

TEST_CASE("PrepareGraph on a loaded graph is PrepareModel without the load", "[pipeline][prepare]") {
  test::TempDir dir("prepare");
  const std::string path = Write(dir, kModel);
  PrepareOptions options;
  options.target = Target::kExecutable;
  options.lowers = LowersAllButMvn;
  const PreparedModel a = PrepareModel(path, options);
  const PreparedModel b = PrepareGraph(LoadModel(path, options.load), options);
  CHECK(a.graph->num_nodes() == b.graph->num_nodes());
  CHECK(a.fusion.groups.size() == b.fusion.groups.size());
}

}  // namespace
}  // namespace onnxfuse
