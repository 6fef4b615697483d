// `onnx-fuse run`: load, fuse, compile, feed, time, check, print.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "backend/lower/core/builder.h"
#include "onnxfuse/error.h"
#include "app/run_job.h"
#include "app/run_report.h"
#include "app/run_staged.h"
#include "backend/plan/plan_file.h"
#include "backend/runtime/verify.h"
#include "common/stopwatch.h"
#include "pipeline/prepare_model.h"
#include "session/execution_options.h"
#include "session/stage_split.h"

namespace onnxfuse {

namespace {

using Clock = std::chrono::steady_clock;

// "input=1x3x224x224, mask=1x7"; "no inputs" for none.
std::string ShapesText(const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  std::string text;
  for (const auto& [name, dims] : shapes) {
    text += (text.empty() ? "" : ", ") + name + "=";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  }
  return text.empty() ? "no inputs" : text;
}

std::string Megabytes(std::int64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / 1e6 << " MB";
  return out.str();
}

// A one-line progress counter on stderr, only for a terminal and runs longer than 2 s.
class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(STDERR_FILENO) != 0) {}
  void Update(int done) {
    if (!tty_ || MsSince(start_) < 2000) return;
    std::fprintf(stderr, "\rrun: %d/%d", done, total_);
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 24, "");
  }

 private:
  int total_;
  bool tty_, shown_ = false;
  Clock::time_point start_ = Clock::now();
};

// The model to time, compiled: from an ONNX file (loaded, fused with the
// strategy, compiled) or from a plan file (its groups and prepacked constants).
struct Prepared {
  std::unique_ptr<Graph> graph;
  FusionPlan fusion;
  std::optional<ExecutablePlan> executable;
  bool fused = true;
  std::string strategy;
  double load_ms = 0;  // reading the model or plan file (and fusing a model), before compiling
  std::optional<PlanFileInfo> plan_file;
  // A model whose shapes follow values: no `executable`; it runs in stages
  // (run_staged.h) from this graph, prepared with these options.
  std::shared_ptr<const Graph> staged;
  PrepareOptions prepare;
};

// Every graph input of known rank with the dims it is compiled at (unknown ones as 1).
std::map<std::string, std::vector<std::int64_t>> CompiledShapes(const Graph& graph) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (ValueId v : graph.inputs()) {
    const TensorType& type = graph.value(v).type;
    if (!type.has_shape) continue;
    std::vector<std::int64_t>& dims = shapes[graph.value(v).name];
    for (std::int64_t d : type.dims) dims.push_back(d >= 0 ? d : 1);
  }
  return shapes;
}

Prepared Prepare(const RunOptions& options) {
  Prepared p;
  auto start = Clock::now();
  if (IsPlanFile(options.model_path)) {
    PlanReadOptions read;
    read.keep_weights = options.check || !options.fuse;  // needs the model's weights again
    read.input_shapes = options.input_shapes;  // a format-3 plan compiles its groups at them
    LoadedPlan loaded = ReadPlanFile(options.model_path, read);
    if (loaded.info.staged) {  // its shapes follow values: in stages, fused with the plan's fuser
      p.staged = loaded.model;
      p.prepare = session::ExecutionOptions(loaded.info.fused ? ParseStrategy(loaded.info.strategy) : kDefaultStrategy);
      p.prepare.fuse = options.fuse || options.check;
      p.fused = options.fuse && loaded.info.fused;
      p.load_ms = MsSince(start);
      p.plan_file = loaded.info;
      return p;
    }
    p.graph = std::move(loaded.graph);
    p.fusion = std::move(loaded.fusion);
    p.strategy = loaded.info.strategy;
    p.fused = loaded.info.fused && options.fuse;
    if (p.fused || !loaded.info.fused) {
      p.executable = std::move(loaded.executable);
    } else {  // --no-fuse on a fused plan: the baseline of its model
      CompileOptions unfused;
      unfused.fuse = false;
      p.executable.emplace(ExecutablePlan::Compile(*p.graph, p.fusion, unfused));
    }
    p.load_ms = MsSince(start) - p.executable->stats().compile_ms;
    p.plan_file = loaded.info;
    return p;
  }
  PrepareOptions prepare = session::ExecutionOptions(options.strategy);
  prepare.load.input_shapes = options.input_shapes;
  prepare.fuse = options.fuse || options.check;  // --check runs the fused plan too
  PreparedModel prepared = PrepareModel(options.model_path, prepare);
  if (ShapesFollowValues(*prepared.graph)) {  // run in stages
    p.staged = std::move(prepared.graph);
    p.prepare = prepare;
    p.fused = options.fuse;
    p.load_ms = MsSince(start);
    return p;
  }
  p.graph = std::move(prepared.graph);
  p.fusion = std::move(prepared.fusion);
  p.fused = options.fuse;
  p.strategy = StrategyName(options.strategy);
  p.load_ms = MsSince(start);
  CompileOptions compile;
  compile.fuse = options.fuse;
  // Without --check nothing compiles this graph again: free its weights as they are packed.
  p.executable.emplace(options.check ? ExecutablePlan::Compile(*p.graph, p.fusion, compile)
                                     : ExecutablePlan::CompileReleasingWeights(*p.graph, p.fusion, compile));
  return p;
}

}  // namespace

RunStats Summarize(std::vector<double> times_ms) {
  RunStats s;
  if (times_ms.empty()) return s;
  std::sort(times_ms.begin(), times_ms.end());
  std::size_t n = times_ms.size();
  s.iterations = static_cast<int>(n);
  s.min_ms = times_ms.front();
  s.max_ms = times_ms.back();
  s.median_ms = n % 2 ? times_ms[n / 2] : (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2;
  auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n)));  // nearest rank
  s.p90_ms = times_ms[std::max<std::size_t>(rank, 1) - 1];
  return s;
}

int RunJob(const RunOptions& options, std::ostream& out) {
  if (options.iterations < 1 || options.warmup < 0 || options.threads < 0)
    throw Error(ErrorKind::kUsage, "--iterations must be >= 1, --warmup and --threads >= 0");
  // oneDNN's OpenMP build fixes a primitive's thread count when it is created.
  if (options.threads > 0) omp_set_num_threads(options.threads);
  const int threads = omp_get_max_threads();

  Prepared prepared = Prepare(options);
  if (prepared.staged) {
    RunOptions staged = options;
    staged.fuse = prepared.fused;  // a plan's stages as it was fused: by its fuser (prepare), or not at all
    return RunStagedJob(staged, prepared.staged, prepared.prepare, prepared.load_ms, out);
  }
  const Graph& graph = *prepared.graph;
  const FusionPlan& plan = prepared.fusion;
  ExecutablePlan& exec = *prepared.executable;
  const bool fused = prepared.fused;

  std::vector<Tensor> inputs =
      options.inputs_dir.empty() ? RandomInputs(graph) : MatchInputs(graph, ReadTensorDir(options.inputs_dir, "input"));
  std::vector<Tensor> outputs;
  for (int i = 0; i < options.warmup; ++i) outputs = exec.Run(inputs);
  std::vector<double> times;
  Progress progress(options.iterations);
  for (int i = 0; i < options.iterations; ++i) {
    auto t0 = Clock::now();
    outputs = exec.Run(inputs);
    times.push_back(MsSince(t0));
    progress.Update(i + 1);
  }
  // --profile: more runs, each step timed alone (a wait after each: the
  // total exceeds the plain median slightly).
  std::vector<double> step_ms;
  Roofline roofline;
  if (options.profile) {
    for (int i = 0; i < options.iterations; ++i) exec.Run(inputs, &step_ms);
    for (double& ms : step_ms) ms /= options.iterations;
    roofline = MeasureRoofline(threads);
  }
  RunStats stats = Summarize(times);
  stats.threads = threads;
  stats.fused = fused;
  stats.plan = exec.stats();
  stats.compile_ms = stats.plan.compile_ms;
  stats.load_ms = prepared.load_ms;
  stats.input_shapes = CompiledShapes(graph);
  if (!options.outputs_dir.empty()) WriteTensorDir(options.outputs_dir, outputs, "output");

  // --check: the other mode on the same inputs (unfused is the reference);
  // a difference is localized to the first fusion group whose result differs.
  nlohmann::json checks = nlohmann::json::array(), first_difference, carried = nlohmann::json::array();
  std::optional<Verification> verification;
  if (options.check) {
    std::vector<Tensor> other = ExecutablePlan::Compile(graph, plan, CompileOptions{!fused}).Run(inputs);
    verification = VerifyOutputs(graph, plan, inputs, fused ? outputs : other, fused ? other : outputs,
                                 options.check_rtol);
    for (const OutputCheck& c : verification->outputs)
      checks.push_back({{"output", c.output}, {"max_abs", c.max_abs}, {"max_rel", c.max_rel}, {"ok", c.ok}});
    const auto group_json = [](const GroupDifference& g) {
      return nlohmann::json{{"group", g.group}, {"function", g.function}, {"nodes", g.nodes}, {"node", g.node},
                            {"value", g.value}, {"max_abs", g.max_abs}, {"max_rel", g.max_rel}};
    };
    if (const auto& g = verification->first) first_difference = group_json(*g);
    for (const GroupDifference& g : verification->carried) carried.push_back(group_json(g));
  }
  const bool check_ok = !verification || verification->ok;

  const PlanStats& ps = stats.plan;
  const nlohmann::json element_types = ElementTypesJson(graph, fused);
  if (options.json) {
    nlohmann::json j = {{"model", options.model_path},
                        {"strategy", prepared.strategy},
                        {"fused", stats.fused},
                        {"threads", stats.threads},
                        {"cpu_isa", CpuIsaName()},
                        {"iterations", stats.iterations},
                        {"warmup", options.warmup},
                        {"min_ms", stats.min_ms},
                        {"median_ms", stats.median_ms},
                        {"p90_ms", stats.p90_ms},
                        {"max_ms", stats.max_ms},
                        {"compile_ms", stats.compile_ms},
                        {"load_ms", stats.load_ms},
                        {"input_shapes", stats.input_shapes},
                        {"kernels", ps.kernels},
                        {"reorders", ps.reorders},
                        {"peak_activation_bytes", ps.arena_bytes},
                        {"buffer_bytes_total", ps.buffer_bytes_total},
                        {"intermediate_bytes_total", ps.intermediate_bytes_total},
                        {"scratchpad_bytes", ps.scratchpad_bytes},
                        {"weight_bytes", ps.weight_bytes}};
    if (options.check) {
      j["check"] = {{"ok", check_ok}, {"rtol", options.check_rtol}, {"outputs", checks},
                    {"without_fake_quantization", verification->without_fake_quantization}};
      if (verification->without_fake_quantization) {
        nlohmann::json quantized = nlohmann::json::array();
        for (const QuantizedCheck& q : verification->quantized)
          quantized.push_back({{"value", q.value}, {"elements", q.elements}, {"max_steps", q.max_steps},
                               {"share_over_one_step", q.share_over_one_step}, {"ok", q.ok}});
        j["check"]["quantized"] = quantized;
        if (!verification->quantized_note.empty()) j["check"]["quantized_note"] = verification->quantized_note;
      }
      if (!check_ok) j["check"]["first_difference"] = first_difference;  // null when not localized
      if (!carried.empty()) j["check"]["carried"] = carried;
      if (!check_ok || !carried.empty()) j["check"]["summary"] = verification->Summary();
    }
    // Steps on a slow implementation (IsSlowPrimitive: oneDNN's reference
    // kernels, gemm-based convolutions), so that benchmarks and the
    // differential tester can count them.
    nlohmann::json slow = nlohmann::json::array();
    for (const ScheduleStep& step : exec.Schedule())
      if (step.slow)
        slow.push_back({{"kind", step.kind}, {"label", step.label}, {"impl", step.impl}});
    j["slow_steps"] = slow;
    j["element_types"] = element_types;
    j["steps"] = StepsJson(exec.Schedule());
    if (options.profile) j["profile"] = ProfileJson(exec.Schedule(), step_ms, roofline);
    // The plan's work per inference: a roofline's coordinates.
    const PlanWork work = WorkOf(exec.Schedule());
    j["flops"] = work.flops;
    j["bytes_moved"] = work.bytes;
    if (prepared.plan_file) {
      const PlanFileInfo& info = *prepared.plan_file;
      j["plan_file_use"] = {{"producer", info.producer},           {"source", info.source},
                        {"built_isa", info.built_isa},         {"running_isa", info.running_isa},
                        {"constants", info.constants},         {"constants_reused", info.constants_reused},
                        {"constants_relaid", info.constants_relaid}, {"constants_repacked", info.constants_repacked},
                        {"constants_mapped", info.constants_mapped},
                        {"same_schedule", info.same_schedule}, {"file_bytes", info.file_bytes},
                        {"format_version", info.format_version}, {"built_shapes", info.built_shapes}};
    }
    out << j.dump() << std::endl;
  } else {
    out << std::fixed << std::setprecision(2);
    out << options.model_path << ": " << (stats.fused ? "fused (" + prepared.strategy + ")" : "unfused") << ", "
        << stats.threads << " thread" << (stats.threads == 1 ? "" : "s") << ", loaded in " << stats.load_ms
        << " ms, compiled for " << ShapesText(stats.input_shapes) << " in " << stats.compile_ms << " ms\n";
    if (prepared.plan_file) {
      const PlanFileInfo& info = *prepared.plan_file;
      out << "  plan file: " << info.producer << ", from " << info.source << ", built for " << info.built_isa
          << ", running on " << info.running_isa << "; constants " << info.constants_reused << " as stored, "
          << info.constants_relaid << " reordered, " << info.constants_repacked << " repacked; schedule "
          << (info.same_schedule ? "as stored" : "re-derived");
      if (!info.built_shapes.empty() && info.built_shapes != stats.input_shapes)
        out << " (built for " << ShapesText(info.built_shapes) << ")";
      out << "\n";
    }
    out << "  kernels " << ps.kernels << " (" << ps.reorders << " reorders), activation arena "
        << Megabytes(ps.arena_bytes) << " (buffers " << Megabytes(ps.buffer_bytes_total) << ", graph intermediates "
        << Megabytes(ps.intermediate_bytes_total) << "), weights " << Megabytes(ps.weight_bytes) << "\n";
    out << "  " << stats.iterations << " iterations after " << options.warmup << " warmup: min " << stats.min_ms
        << " ms, median " << stats.median_ms << " ms, p90 " << stats.p90_ms << " ms, max " << stats.max_ms << " ms\n";
    if (element_types.size() > 1 || (element_types.size() == 1 && !element_types.contains("FLOAT")))
      PrintElementTypes(out, element_types);
    PrintInt8Convolutions(out, exec.Schedule());
    if (options.profile) PrintProfile(out, exec.Schedule(), step_ms, options.iterations, roofline);
    const bool float_graph = verification && verification->without_fake_quantization;
    for (const auto& c : checks)
      out << std::scientific << std::setprecision(2) << "  check " << c["output"].get<std::string>()
          << (float_graph ? " (fused vs unfused, without fake quantization)" : " (fused vs unfused)") << ": max abs " << c["max_abs"].get<double>() << ", max rel " << c["max_rel"].get<double>()
          << (c["ok"].get<bool>() ? " ok" : check_ok ? " ok, by the graph's conditioning (below)" : " FAILED") << "\n"
          << std::fixed;
    if (float_graph) PrintQuantizedCheck(out, *verification);
    if (verification && (!check_ok || !verification->carried.empty())) out << "  " << verification->Summary() << "\n";
  }
  if (!check_ok) spdlog::error("--check: the plans differ: {}", verification->Summary());
  return check_ok ? 0 : 1;
}

}  // namespace onnxfuse
