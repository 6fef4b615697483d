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
#include <numeric>
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

namespace {

// Mean ms per inference of each kind of step ("conv", "reorder", ...), slowest first.
std::vector<std::pair<std::string, double>> MsPerKind(const std::vector<ScheduleStep>& schedule,
                                                     const std::vector<double>& step_ms) {
  std::map<std::string, double> per_kind;
  for (std::size_t i = 0; i < schedule.size() && i < step_ms.size(); ++i) per_kind[schedule[i].kind] += step_ms[i];
  std::vector<std::pair<std::string, double>> sorted(per_kind.begin(), per_kind.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

// "element types: FLOAT (214 values) as float32; INT32 (42 values), UINT8 (80
// values) only in QuantizeLinear/DequantizeLinear (constants used at build
// time; ...)": the values a quantization alone reads described once.
void PrintElementTypes(std::ostream& out, const nlohmann::json& element_types) {
  std::vector<std::string> quantization_only;
  std::string dequantized_as;
  const char* separator = " ";
  out << "  element types:";
  for (const auto& [type, use] : element_types.items()) {
    const int values = use["values"].get<int>(), dequantized = use.value("dequantized_values", 0);
    if (dequantized > 0) dequantized_as = use["dequantized_as"].get<std::string>();
    if (dequantized == values) {
      quantization_only.push_back(type + " (" + std::to_string(values) + " values)");
      continue;
    }
    out << separator << type << " (" << values << " values) " << use["computed_as"].get<std::string>();
    if (dequantized > 0) out << ", " << dequantized << " of them only in QuantizeLinear/DequantizeLinear";
    separator = "; ";
  }
  if (!quantization_only.empty()) {
    out << separator;
    for (std::size_t i = 0; i < quantization_only.size(); ++i) out << (i ? ", " : "") << quantization_only[i];
    out << " only in QuantizeLinear/DequantizeLinear";
  }
  if (!dequantized_as.empty()) out << " (" << dequantized_as << ")";
  out << "\n";
}

// "1 step", "3 steps", "inf steps".
std::string FormatSteps(double steps) {
  if (!std::isfinite(steps)) return "inf steps";
  const auto n = static_cast<long long>(steps);
  return std::to_string(n) + (n == 1 ? " step" : " steps");
}

// "check quantized activations ...: 40, at most 1 step apart ... ok"
void PrintQuantizedCheck(std::ostream& out, const Verification& v) {
  const QuantizedCheck worst = v.WorstQuantized();
  out << "  check quantized activations (each layer on the same integers in both plans): " << v.quantized.size()
      << ", at most " << FormatSteps(worst.max_steps) << " apart, at most " << std::setprecision(3)
      << 100 * worst.share_over_one_step << "% of a tensor more than one step" << (worst.ok ? " ok" : " FAILED") << "\n"
      << std::setprecision(2);
}

// "int8 convolutions: 20 of 20", and why the others are float
// (ScheduleStep::note), for a plan with quantized convolutions; nothing otherwise.
void PrintInt8Convolutions(std::ostream& out, const std::vector<ScheduleStep>& schedule) {
  int int8 = 0, total = 0;
  std::map<std::string, int> reasons;
  for (const ScheduleStep& s : schedule) {
    if (s.kind != "conv") continue;
    const bool on_int8 = s.impl.find("int8") != std::string::npos;
    if (!on_int8 && s.note.empty()) continue;
    ++total;
    if (on_int8) ++int8;
    else ++reasons[s.note];
  }
  if (total == 0) return;
  out << "  int8 convolutions: " << int8 << " of " << total << " quantized ones\n";
  for (const auto& [reason, count] : reasons) out << "    " << count << " " << reason << "\n";
}

// Each step with its implementation (oneDNN's name, e.g.
// "jit_uni_int8:avx2" for an int8 convolution, or ours), the fusion group
// that emitted it and that group's library pattern (null when none): what
// the report's groups became.
nlohmann::json StepsJson(const std::vector<ScheduleStep>& schedule) {
  nlohmann::json steps = nlohmann::json::array();
  for (const ScheduleStep& s : schedule)
    steps.push_back({{"kind", s.kind},
                     {"label", s.label},
                     {"impl", s.impl},
                     {"group", s.group < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.group)},
                     {"pattern", s.pattern.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.pattern)},
                     {"note", s.note.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.note)}});
  return steps;
}

nlohmann::json ProfileJson(const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms) {
  nlohmann::json steps = nlohmann::json::array(), kinds = nlohmann::json::object();
  for (std::size_t i = 0; i < schedule.size() && i < step_ms.size(); ++i)
    steps.push_back({{"kind", schedule[i].kind}, {"label", schedule[i].label}, {"impl", schedule[i].impl},
                     {"ms", step_ms[i]}});
  for (const auto& [kind, ms] : MsPerKind(schedule, step_ms)) kinds[kind] = ms;
  return {{"steps", steps}, {"kinds", kinds}};
}

void PrintProfile(std::ostream& out, const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                  int runs) {
  constexpr std::size_t kShown = 15;
  double total = 0;
  for (double ms : step_ms) total += ms;
  out << std::setprecision(3);
  out << "  profile: " << total << " ms per inference in steps timed one by one (" << runs << " runs); by kind:";
  for (const auto& [kind, ms] : MsPerKind(schedule, step_ms)) out << " " << kind << " " << ms;
  out << "\n  slowest steps (ms, kind, nodes, implementation):\n";
  std::vector<std::size_t> order(std::min(schedule.size(), step_ms.size()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return step_ms[a] > step_ms[b]; });
  order.resize(std::min(order.size(), kShown));
  for (std::size_t i : order)
    out << "    " << std::setw(7) << step_ms[i] << "  " << schedule[i].kind << "  " << schedule[i].label << "  "
        << schedule[i].impl << "\n";
  out << std::setw(0) << std::setprecision(2);
}

// How each element type of the graph's values is held and computed at run
// time (src/backend/runtime/executor.h, "Element types"): {"FLOAT16": {"values":
// 12, "computed_as": "as float32, converted at the edges"}, ...}.
// A value only QuantizeLinear and DequantizeLinear nodes read (a QDQ model's
// quantized weights, biases and activations, and zero points): how it is held
// depends on the plan, not on its type.
bool IsDequantized(const Graph& graph, const Value& value) {
  return !value.consumers.empty() && std::all_of(value.consumers.begin(), value.consumers.end(), [&](NodeId c) {
    const Node& n = graph.node(c);
    return (n.op_type == "DequantizeLinear" || n.op_type == "QuantizeLinear") && n.domain.empty();
  });
}

nlohmann::json ElementTypesJson(const Graph& graph, bool fused) {
  std::map<std::int32_t, int> counts, dequantized;
  for (const Value& value : graph.values())
    if (value.type.elem_type != onnx::TensorProto::UNDEFINED) {
      ++counts[value.type.elem_type];
      if (value.type.elem_type != onnx::TensorProto::FLOAT && IsDequantized(graph, value))
        ++dequantized[value.type.elem_type];
    }
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [type, count] : counts) {
    std::string how = "as float32";
    if (type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::DOUBLE)
      how = "as float32, converted at the edges (float16 results of host steps rounded to half)";
    else if (type == onnx::TensorProto::BOOL)
      how = "as int64 0/1, on host steps";
    else if (StorageTypeOf(type) == onnx::TensorProto::INT64)
      how = "as int64, on host steps, wrapped to the type's width";
    else if (type != onnx::TensorProto::FLOAT)
      how = "not held at run time";
    nlohmann::json use = {{"values", count}, {"computed_as", how}};
    if (const int n = dequantized.count(type) ? dequantized.at(type) : 0; n > 0 && fused) {
      use["dequantized_values"] = n;
      use["dequantized_as"] =
          "constants used at build time; activations 8-bit where an int8 convolution reads them, else "
          "dequantized in the pass that quantizes them";
    }
    types[onnx::TensorProto::DataType_Name(type)] = use;
  }
  return types;
}

}  // namespace

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
  if (options.profile) {
    for (int i = 0; i < options.iterations; ++i) exec.Run(inputs, &step_ms);
    for (double& ms : step_ms) ms /= options.iterations;
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
  nlohmann::json checks = nlohmann::json::array(), first_difference;
  std::optional<Verification> verification;
  if (options.check) {
    std::vector<Tensor> other = ExecutablePlan::Compile(graph, plan, CompileOptions{!fused}).Run(inputs);
    verification = VerifyOutputs(graph, plan, inputs, fused ? outputs : other, fused ? other : outputs,
                                 options.check_rtol);
    for (const OutputCheck& c : verification->outputs)
      checks.push_back({{"output", c.output}, {"max_abs", c.max_abs}, {"max_rel", c.max_rel}, {"ok", c.ok}});
    if (const auto& g = verification->first)
      first_difference = {{"group", g->group}, {"function", g->function}, {"nodes", g->nodes}, {"node", g->node},
                          {"value", g->value}, {"max_abs", g->max_abs}, {"max_rel", g->max_rel}};
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
      if (!check_ok) {
        j["check"]["first_difference"] = first_difference;  // null when not localized
        j["check"]["summary"] = verification->Summary();
      }
    }
    // Steps on a slow implementation (IsSlowImpl: oneDNN's reference kernels,
    // gemm-based convolutions), so that benchmarks can count them.
    nlohmann::json slow = nlohmann::json::array();
    for (const ScheduleStep& step : exec.Schedule())
      if (backend::IsSlowImpl(step.kind, step.impl))
        slow.push_back({{"kind", step.kind}, {"label", step.label}, {"impl", step.impl}});
    j["slow_steps"] = slow;
    j["element_types"] = element_types;
    j["steps"] = StepsJson(exec.Schedule());
    if (options.profile) j["profile"] = ProfileJson(exec.Schedule(), step_ms);
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
    if (options.profile) PrintProfile(out, exec.Schedule(), step_ms, options.iterations);
    const bool float_graph = verification && verification->without_fake_quantization;
    for (const auto& c : checks)
      out << std::scientific << std::setprecision(2) << "  check " << c["output"].get<std::string>()
          << (float_graph ? " (fused vs unfused, without fake quantization)" : " (fused vs unfused)") << ": max abs " << c["max_abs"].get<double>() << ", max rel " << c["max_rel"].get<double>()
          << (c["ok"].get<bool>() ? " ok" : " FAILED") << "\n"
          << std::fixed;
    if (float_graph) PrintQuantizedCheck(out, *verification);
    if (!check_ok) out << "  " << verification->Summary() << "\n";
  }
  if (!check_ok) spdlog::error("--check: the plans differ: {}", verification->Summary());
  return check_ok ? 0 : 1;
}

}  // namespace onnxfuse
