#include "app/run_staged.h"

#include <omp.h>

#include <chrono>
#include <iomanip>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/stopwatch.h"
#include "ir/tensor_io.h"
#include "onnxfuse/error.h"
#include "pipeline/prepare_model.h"
#include "session/heap_reuse.h"
#include "session/staged_model.h"

namespace onnxfuse {

namespace {

using Clock = std::chrono::steady_clock;

// Stages kept by `run`: every stage of one input signature, with room to spare.
constexpr std::size_t kStagesKept = 64;

}  // namespace

int RunStagedJob(const RunOptions& options, std::shared_ptr<const Graph> prepared, const PrepareOptions& prepare,
                 double load_ms, std::ostream& out) {
  if (options.profile)
    throw Error(ErrorKind::kUsage, options.model_path + ": --profile times the steps of one schedule; this model's "
                                                        "shapes follow values and it runs in stages");
  const Graph& graph = *prepared;
  std::vector<Tensor> inputs =
      options.inputs_dir.empty() ? RandomInputs(graph) : MatchInputs(graph, ReadTensorDir(options.inputs_dir, "input"));
  session::KnownValues feed;
  for (const Tensor& t : inputs) feed[t.name] = t;

  session::KeepFreedMemoryForReuse();  // as a session does: each call's tensors reuse the last call's memory
  session::StagedModel model(prepared, prepare, options.fuse, kStagesKept);
  std::vector<Tensor> outputs;
  for (int i = 0; i < options.warmup; ++i) outputs = model.Run(feed);
  std::vector<double> times;
  for (int i = 0; i < options.iterations; ++i) {
    const auto start = Clock::now();
    outputs = model.Run(feed);
    times.push_back(MsSince(start));
  }
  RunStats stats = Summarize(times);
  stats.threads = omp_get_max_threads();
  stats.fused = options.fuse;
  stats.load_ms = load_ms;
  const session::StagedStats staged = model.stats();
  if (!options.outputs_dir.empty()) WriteTensorDir(options.outputs_dir, outputs, "output");

  // --check: the other mode's stages on the same inputs.
  nlohmann::json checks = nlohmann::json::array();
  bool check_ok = true;
  if (options.check) {
    session::StagedModel other(prepared, prepare, !options.fuse, kStagesKept);
    const std::vector<Tensor> reference = other.Run(feed);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const TensorDiff d = CompareTensors(options.fuse ? reference[k] : outputs[k], options.fuse ? outputs[k] : reference[k]);
      const bool ok = !d.shape_mismatch && d.max_rel <= options.check_rtol;
      check_ok = check_ok && ok;
      checks.push_back({{"output", outputs[k].name}, {"max_abs", d.max_abs}, {"max_rel", d.max_rel}, {"ok", ok},
                        {"shape_mismatch", d.shape_mismatch}});
    }
  }
  const nlohmann::json staged_json = {{"stages_compiled", staged.stages_compiled}, {"stage_hits", staged.stage_hits},
                                      {"stages_run", staged.stages_run},           {"nodes_evaluated", staged.nodes_evaluated},
                                      {"compile_ms", staged.compile_ms}};
  if (options.json) {
    nlohmann::json output_shapes = nlohmann::json::object();
    for (const Tensor& t : outputs) output_shapes[t.name] = t.dims;
    nlohmann::json j = {{"model", options.model_path},  {"strategy", StrategyName(prepare.fusion.strategy)},
                        {"fused", stats.fused},         {"threads", stats.threads},
                        {"iterations", stats.iterations}, {"warmup", options.warmup},
                        {"min_ms", stats.min_ms},       {"median_ms", stats.median_ms},
                        {"p90_ms", stats.p90_ms},       {"max_ms", stats.max_ms},
                        {"load_ms", stats.load_ms},     {"compile_ms", staged.compile_ms},
                        {"staged", staged_json},        {"output_shapes", output_shapes}};
    if (options.check) j["check"] = {{"ok", check_ok}, {"rtol", options.check_rtol}, {"outputs", checks}};
    out << j.dump() << std::endl;
  } else {
    out << std::fixed << std::setprecision(2);
    out << options.model_path << ": " << (stats.fused ? "fused (" + StrategyName(prepare.fusion.strategy) + ")" : "unfused")
        << ", " << stats.threads << " thread" << (stats.threads == 1 ? "" : "s") << ", loaded in " << stats.load_ms
        << " ms; its shapes follow values, so it runs in stages\n";
    out << "  stages: " << staged.stages_compiled << " compiled (" << staged.compile_ms << " ms), "
        << staged.stage_hits << " found in the cache, " << staged.stages_run << " run; " << staged.nodes_evaluated
        << " nodes evaluated between them (over " << options.warmup + options.iterations << " runs)\n";
    out << "  " << stats.iterations << " iterations after " << options.warmup << " warmup: min " << stats.min_ms
        << " ms, median " << stats.median_ms << " ms, p90 " << stats.p90_ms << " ms, max " << stats.max_ms << " ms\n";
    for (const auto& c : checks)
      out << std::scientific << std::setprecision(2) << "  check " << c["output"].get<std::string>()
          << " (fused vs unfused): max abs " << c["max_abs"].get<double>() << ", max rel " << c["max_rel"].get<double>()
          << (c["shape_mismatch"].get<bool>() ? ", shapes differ" : "") << (c["ok"].get<bool>() ? " ok" : " FAILED")
          << "\n"
          << std::fixed;
  }
  if (!check_ok) spdlog::error("--check: outputs differ beyond {} relative", options.check_rtol);
  return check_ok ? 0 : 1;
}

}  // namespace onnxfuse
