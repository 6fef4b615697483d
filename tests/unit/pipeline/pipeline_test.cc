// The fuse job (pipeline/pipeline.h): what it writes, what it refuses, the
// plan-file hook, and the pattern library it loads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "onnxfuse/error.h"
#include "pipeline/pipeline.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using test::FileContents;

// The basic block written to DIR/block.onnx, and a job reading it.
FuseJob BlockJob(const test::TempDir& dir, Strategy strategy = Strategy::kPostdom) {
  const std::string input = (dir.path / "block.onnx").string();
  std::ofstream(input, std::ios::binary) << test::ParseModel(test::kBasicBlock).SerializeAsString();
  FuseJob job;
  job.input_path = input;
  job.strategy = strategy;
  return job;
}

bool HasOp(const onnx::ModelProto& model, const std::string& op_type) {
  for (const auto& n : model.graph().node())
    if (n.op_type() == op_type) return true;
  return false;
}

}  // namespace

TEST_CASE("a job writes the fused model and its report, and returns the report", "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job = BlockJob(dir);
  job.output_path = (dir.path / "fused.onnx").string();
  job.report_path = (dir.path / "report.json").string();
  job.dot_path = (dir.path / "fused.dot").string();
  const json report = RunFuseJob(job);
  CHECK(report["strategy"] == "postdom");
  CHECK(report["emit"] == "functions");
  CHECK(report["model"]["node_count"] == 8);
  CHECK(report["totals"]["fused_groups"].get<int>() >= 1);
  CHECK_FALSE(report.contains("bn_folding"));
  CHECK(json::parse(FileContents(job.report_path)) == report);
  CHECK(FileContents(job.dot_path).rfind("digraph", 0) == 0);

  Graph fused = LoadModel(job.output_path);
  CHECK(fused.model().functions_size() >= 1);
  CHECK(fused.num_nodes() == report["totals"]["kernels_after"].get<std::size_t>());
}

TEST_CASE("fold_bn and emit plain: BatchNormalization folded, standard ONNX written", "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job = BlockJob(dir);
  job.output_path = (dir.path / "plain.onnx").string();
  job.emit = "plain";
  const json report = RunFuseJob(job);
  CHECK(report["emit"] == "plain");
  CHECK(report["bn_folding"]["folded"].size() == 2);
  CHECK(report["bn_folding"]["refused"].empty());
  CHECK(report["model"]["op_histogram"].count("BatchNormalization") == 0);
  auto written = LoadModel(job.output_path);
  CHECK(written.model().functions_size() == 0);
  CHECK_FALSE(HasOp(written.model(), "BatchNormalization"));
  CHECK(HasOp(written.model(), "Conv"));
}

TEST_CASE("explain_node prints where the node went", "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job = BlockJob(dir, Strategy::kGreedy);
  job.explain_node = "Conv_1";
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  try {
    RunFuseJob(job);
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  CHECK_THAT(captured.str(), Catch::StartsWith("Conv_1 (Conv, kOutEWiseFusable)\n"));
}

TEST_CASE("the input is never overwritten: bad strategies and plan files without a backend are usage errors",
          "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job = BlockJob(dir);
  const std::string original = FileContents(job.input_path);
  job.output_path = job.input_path;
  auto e = test::ErrorOf([&] { RunFuseJob(job); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK(e.message == job.input_path + ": refusing to overwrite the input model; choose another -o");
  job.output_path = (dir.path / "." / "block.onnx").string();  // the same file by another spelling
  CHECK(test::ErrorOf([&] { RunFuseJob(job); }).kind == ErrorKind::kUsage);
  job.output_path.clear();
  job.report_path = job.input_path;
  CHECK(test::ErrorOf([&] { RunFuseJob(job); }).message == job.input_path + ": refusing to overwrite the input model");
  CHECK(FileContents(job.input_path) == original);

  job.report_path.clear();
  job.output_path = (dir.path / "block.plan").string();
  e = test::ErrorOf([&] { RunFuseJob(job); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK(e.message == job.output_path + ": this build has no backend to write plan files with");
  CHECK_FALSE(fs::exists(job.output_path));
}

TEST_CASE("a plan file is written by the given writer with the job's graph and plan", "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job = BlockJob(dir);
  job.output_path = (dir.path / "block.plan").string();
  std::size_t nodes_seen = 0, groups_seen = 0;
  PlanFileWriter writer = [&](const FuseJob& j, const Graph& graph, const FusionPlan& plan) {
    CHECK(j.output_path == job.output_path);
    nodes_seen = graph.num_nodes();
    groups_seen = plan.groups.size();
    return json{{"steps", 3}};
  };
  const json report = RunFuseJob(job, writer);
  CHECK(nodes_seen == 8);
  CHECK(groups_seen == report["totals"]["kernels_after"].get<std::size_t>());
  CHECK(report["emit"] == "plan");
  CHECK(report["plan_file"] == json{{"steps", 3}});
  CHECK_FALSE(fs::exists(job.output_path));  // the fake writer wrote nothing; the pipeline neither
}

TEST_CASE("EmitsPlanFile: --emit plan or a .plan path, and plain with .plan is a usage error", "[pipeline]") {
  FuseJob job;
  job.output_path = "m.plan";
  CHECK(EmitsPlanFile(job));
  job.output_path = "m.onnx";
  CHECK_FALSE(EmitsPlanFile(job));
  job.emit = "plan";
  CHECK(EmitsPlanFile(job));
  job.output_path = ".plan";  // only a suffix after a name counts
  job.emit = "functions";
  CHECK_FALSE(EmitsPlanFile(job));
  job.output_path = "m.plan";
  job.emit = "plain";
  auto e = test::ErrorOf([&] { EmitsPlanFile(job); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK(e.message == "m.plan: --emit plain writes an ONNX model; name it .onnx, or use --emit plan");
}

TEST_CASE("LoadPatterns: the built-in library, then extra folders, names unique", "[pipeline]") {
  const auto builtin = LoadPatterns({});
  REQUIRE_FALSE(builtin.empty());
  CHECK(builtin.size() == LoadPatternDir(BuiltinPatternDir()).size());

  test::TempDir dir("pipeline");
  const std::string body = "<domain: \"ai.onnxfuse\", opset_import: [\"\" : 13]>\n{NAME} (X) => (Y) {\n  Y = Relu (X)\n}\n";
  auto write = [&](const std::string& name) {
    std::string text = body;
    text.replace(text.find("{NAME}"), 6, name);
    std::ofstream(dir.path / "extra.onnxtxt") << text;
  };
  write("MyRelu");
  auto extended = LoadPatterns({dir.path.string()});
  REQUIRE(extended.size() == builtin.size() + 1);
  CHECK(extended.back().function.name() == "MyRelu");

  write(builtin.front().function.name());
  auto e = test::ErrorOf([&] { LoadPatterns({dir.path.string()}); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("extra.onnxtxt:1: pattern " + builtin.front().function.name() +
                                        " is already defined in " + builtin.front().file));
}

TEST_CASE("a plan file job expands the function ops the backend does not lower, an ONNX output keeps them",
          "[pipeline]") {
  test::TempDir dir("pipeline");
  FuseJob job;
  job.input_path = (dir.path / "mvn.onnx").string();
  std::ofstream(job.input_path, std::ios::binary) << test::ParseModel(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[1,2,3,3] x) => (float[1,2,3,3] y) {\n"
      "  y = MeanVarianceNormalization(x)\n"
      "}\n").SerializeAsString();
  OpLowered lowers = [](const std::string& domain, const std::string& op) {
    return domain.empty() && op != "MeanVarianceNormalization";
  };
  std::vector<std::string> ops_seen;
  PlanFileWriter writer = [&](const FuseJob&, const Graph& graph, const FusionPlan&) {
    for (const Node& n : graph.nodes()) ops_seen.push_back(n.op_type);
    return json{{"steps", 1}};
  };
  job.output_path = (dir.path / "mvn.plan").string();
  json report = RunFuseJob(job, writer, lowers);
  CHECK(ops_seen.size() == 11);
  CHECK(std::count(ops_seen.begin(), ops_seen.end(), "MeanVarianceNormalization") == 0);
  CHECK(report["expanded_functions"] ==
        json::array({{{"node", "MeanVarianceNormalization_0"}, {"op_type", "MeanVarianceNormalization"}, {"body_nodes", 11}}}));
  CHECK(report["totals"]["nodes_before"] == 11);

  job.output_path = (dir.path / "mvn_fused.onnx").string();
  report = RunFuseJob(job, writer, lowers);
  onnx::ModelProto written;
  REQUIRE(written.ParseFromString(FileContents(job.output_path)));
  CHECK(HasOp(written, "MeanVarianceNormalization"));
  CHECK_FALSE(report.contains("expanded_functions"));
}
