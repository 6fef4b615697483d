#include "onnxfuse/pipeline.h"

#include <chrono>
#include <filesystem>
#include <iostream>

#include <spdlog/spdlog.h>

#include "onnxfuse/atomic_file.h"
#include "onnxfuse/error.h"
#include "onnxfuse/greedy_fuser.h"
#include "onnxfuse/onnx_writer.h"
#include "onnxfuse/postdom_fuser.h"
#include "onnxfuse/report.h"

namespace onnxfuse {

namespace fs = std::filesystem;

namespace {

class Stopwatch {
 public:
  double LapMs() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - start_).count();
    start_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

const std::vector<std::string>& StrategyNames() {
  static const std::vector<std::string> names = {"postdom", "greedy"};
  return names;
}

nlohmann::json RunFuseJob(const FuseJob& job) {
  if (!job.output_path.empty() && SameFile(job.input_path, job.output_path))
    throw Error(ErrorKind::kUsage, job.output_path + ": refusing to overwrite the input model; choose another -o");
  if (!job.report_path.empty() && job.report_path != "-" && SameFile(job.input_path, job.report_path))
    throw Error(ErrorKind::kUsage, job.report_path + ": refusing to overwrite the input model with the report");

  StageTimes times;
  Stopwatch watch;
  Graph graph = LoadModel(job.input_path, job.load);
  times.load_ms = watch.LapMs();
  spdlog::debug("loaded {}: {} nodes, opset {}", job.input_path, graph.num_nodes(), graph.opset());

  auto kinds = ClassifyAll(graph);
  times.classify_ms = watch.LapMs();

  FusionPlan plan;
  if (job.strategy == "postdom") plan = FuseByPostDominator(graph, job.fuser);
  else if (job.strategy == "greedy") plan = FuseGreedy(graph, job.fuser);
  else throw Error(ErrorKind::kUsage, "unknown strategy '" + job.strategy + "'");
  ValidateFusionPlan(graph, plan);
  times.fuse_ms = watch.LapMs();

  FusedModel fused = BuildFusedModel(graph, plan);
  times.build_ms = watch.LapMs();
  if (job.check) CheckFusedModel(fused.model);
  times.check_ms = watch.LapMs();
  if (!job.output_path.empty()) SaveModelAtomically(fused.model, job.output_path);
  times.save_ms = watch.LapMs();

  nlohmann::json report = BuildReport(graph, kinds, plan, fused.function_of_group, times);
  const auto& totals = report["totals"];
  spdlog::info("{}: {} nodes -> {} kernels ({} fused groups), {:.1f} MB of intermediates eliminated, {:.0f} ms",
               job.input_path, totals["nodes_before"].get<std::int64_t>(),
               totals["kernels_after"].get<std::int64_t>(), totals["fused_groups"].get<std::int64_t>(),
               static_cast<double>(totals["intermediate_bytes_eliminated"].get<std::int64_t>()) / 1e6,
               report["timings_ms"]["total"].get<double>());
  if (job.report_path == "-") std::cout << report.dump(2) << std::endl;
  else if (!job.report_path.empty()) WriteTextAtomically(job.report_path, report.dump(2) + "\n");
  return report;
}

}  // namespace onnxfuse
