#include "pipeline/pipeline.h"

#include <chrono>
#include <iostream>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "report/dot_writer.h"
#include "onnxfuse/error.h"
#include "pipeline/prepare_model.h"
#include "report/explain.h"
#include "write/onnx_writer.h"
#include "report/report.h"

namespace onnxfuse {

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

// Report section of --fold-bn; node names are those of the model as loaded.
nlohmann::json DescribeFolding(const FoldResult& fold) {
  auto name = [](const std::string& node) { return node.empty() ? nlohmann::json(nullptr) : nlohmann::json(node); };
  nlohmann::json folded = nlohmann::json::array(), refused = nlohmann::json::array();
  for (const auto& f : fold.folded)
    folded.push_back({{"batchnorm", name(f.batchnorm)}, {"conv", name(f.conv)}, {"weight", f.weight}, {"bias", f.bias}});
  for (const auto& r : fold.refused)
    refused.push_back({{"batchnorm", name(r.batchnorm)}, {"conv", name(r.conv)}, {"reason", r.reason}, {"detail", r.detail}});
  spdlog::info("folded {} BatchNormalization nodes into convolutions; {} refused", fold.folded.size(), fold.refused.size());
  return {{"folded", folded}, {"refused", refused}};
}

// Report section of the control-flow expansion; node names are those of the graph each round saw.
nlohmann::json DescribeControlFlow(const ControlFlowResult& result) {
  nlohmann::json expanded = nlohmann::json::array(), refused = nlohmann::json::array();
  for (const auto& e : result.expanded) expanded.push_back({{"node", e.node}, {"op_type", e.op_type}, {"detail", e.detail}});
  for (const auto& r : result.refused)
    refused.push_back({{"node", r.node}, {"op_type", r.op_type}, {"reason", r.reason}, {"detail", r.detail}});
  spdlog::info("expanded {} If/Loop/Scan nodes; {} stay", result.expanded.size(), result.refused.size());
  return {{"expanded", expanded}, {"refused", refused}};
}

// Report section of a plan file's function expansion: the nodes replaced by their bodies.
nlohmann::json DescribeExpansion(const FunctionExpansion& expansion) {
  nlohmann::json expanded = nlohmann::json::array();
  for (const auto& e : expansion.expanded)
    expanded.push_back({{"node", e.node}, {"op_type", e.op_type}, {"body_nodes", e.body_nodes}});
  return expanded;
}

}  // namespace

bool EmitsPlanFile(const FuseJob& job) {
  const std::string suffix = ".plan";
  const std::string& out = job.output_path;
  bool plan_name = out.size() > suffix.size() && out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (job.emit == "plain" && plan_name)
    throw Error(ErrorKind::kUsage, out + ": --emit plain writes an ONNX model; name it .onnx, or use --emit plan");
  return job.emit == "plan" || plan_name;
}

std::vector<Pattern> LoadPatterns(const std::vector<std::string>& extra_dirs) {
  std::vector<Pattern> patterns = LoadPatternDir(BuiltinPatternDir());
  for (const auto& dir : extra_dirs) {
    for (auto& pattern : LoadPatternDir(dir)) {
      for (const auto& known : patterns)
        if (known.function.name() == pattern.function.name())
          throw Error(ErrorKind::kInvalidModel, pattern.file + ":" + std::to_string(pattern.line) + ": pattern " +
                                                    pattern.function.name() + " is already defined in " + known.file);
      patterns.push_back(std::move(pattern));
    }
  }
  return patterns;
}

FuseSettings FuseSettingsOf(const FuseJob& job) {
  FuseSettings settings;
  settings.strategy = job.strategy;
  settings.fuser = job.fuser;
  settings.pattern_dirs = job.pattern_dirs;
  return settings;
}

nlohmann::json RunFuseJob(const FuseJob& job, const PlanFileWriter& write_plan, const OpLowered& plan_lowers) {
  if (!job.output_path.empty() && SameFile(job.input_path, job.output_path))
    throw Error(ErrorKind::kUsage, job.output_path + ": refusing to overwrite the input model; choose another -o");
  for (const std::string* path : {&job.report_path, &job.dot_path, &job.svg_path})
    if (!path->empty() && *path != "-" && SameFile(job.input_path, *path))
      throw Error(ErrorKind::kUsage, *path + ": refusing to overwrite the input model");

  StageTimes times;
  Stopwatch watch;
  const bool emit_plan = EmitsPlanFile(job);
  PrepareOptions options;
  // Only a plan file that is written is executed; --emit plan without -o reports the ONNX target's fusion.
  options.target = emit_plan && !job.output_path.empty() ? Target::kExecutable : Target::kOnnx;
  // As `run` prepares it: an If or Loop decided at run time stays, and the
  // plan stores the model to run in stages (plan_file.h).
  options.keep_run_time_control_flow = true;
  options.load = job.load;
  options.fold_bn = job.fold_bn || job.emit == "plain";
  options.fusion = FuseSettingsOf(job);
  options.lowers = plan_lowers;
  PreparedModel prepared = PrepareModel(job.input_path, options);
  const Graph& graph = *prepared.graph;
  const FusionPlan& plan = prepared.fusion;
  const ControlFlowResult& control_flow = prepared.control_flow;
  nlohmann::json bn_folding;
  if (prepared.bn_folding) bn_folding = DescribeFolding(*prepared.bn_folding);
  nlohmann::json expanded_functions;
  if (!prepared.functions.expanded.empty()) expanded_functions = DescribeExpansion(prepared.functions);
  times.load_ms = prepared.load_ms;
  times.fuse_ms = prepared.fuse_ms;
  spdlog::debug("loaded {}: {} nodes, opset {}", job.input_path, graph.num_nodes(), graph.opset());
  watch.LapMs();

  auto kinds = ClassifyAll(graph);
  times.classify_ms = watch.LapMs();

  FusedModel fused = BuildFusedModel(graph, plan);
  if (job.emit == "plain") fused.model = graph.model();  // the plan is reported, the model stays standard ONNX
  times.build_ms = watch.LapMs();
  if (job.check && !emit_plan) CheckFusedModel(fused.model);
  times.check_ms = watch.LapMs();
  nlohmann::json plan_file;
  if (!job.output_path.empty() && emit_plan) {
    // The executable plan: compiled for this CPU by the backend, with the same groups.
    if (!write_plan)
      throw Error(ErrorKind::kUsage, job.output_path + ": this build has no backend to write plan files with");
    plan_file = write_plan(job, graph, plan);
  } else if (!job.output_path.empty()) {
    SaveModelAtomically(fused.model, job.output_path);
  }
  times.save_ms = watch.LapMs();

  nlohmann::json report = BuildReport(graph, kinds, plan, fused.function_of_group, times);
  report["emit"] = emit_plan ? "plan" : job.emit;
  if (!plan_file.is_null()) report["plan_file"] = plan_file;
  if (!bn_folding.is_null()) report["bn_folding"] = bn_folding;
  if (!control_flow.expanded.empty() || !control_flow.refused.empty())
    report["control_flow"] = DescribeControlFlow(control_flow);
  if (!expanded_functions.is_null()) report["expanded_functions"] = expanded_functions;
  const auto& totals = report["totals"];
  spdlog::info("{}: {} nodes -> {} kernels ({} fused groups), {:.1f} MB of intermediates eliminated, {:.0f} ms",
               job.input_path, totals["nodes_before"].get<std::int64_t>(),
               totals["kernels_after"].get<std::int64_t>(), totals["fused_groups"].get<std::int64_t>(),
               static_cast<double>(totals["intermediate_bytes_eliminated"].get<std::int64_t>()) / 1e6,
               report["timings_ms"]["total"].get<double>());
  if (!job.dot_path.empty() || !job.svg_path.empty()) {
    std::string dot = ToDot(graph, plan, fused.function_of_group);
    if (!job.dot_path.empty()) WriteTextAtomically(job.dot_path, dot);
    if (!job.svg_path.empty()) RenderSvg(dot, job.svg_path);
  }
  if (!job.explain_node.empty())
    std::cout << ExplainNode(graph, kinds, plan, fused.function_of_group, job.explain_node) << std::flush;
  if (job.report_path == "-") std::cout << report.dump(2) << std::endl;
  else if (!job.report_path.empty()) WriteTextAtomically(job.report_path, report.dump(2) + "\n");
  return report;
}

}  // namespace onnxfuse
