// InferenceSession's constructor: a plan file replayed, or a .onnx model
// prepared once (symbolically, or at its fixed shapes, or kept for stages);
// the schedules per input signature: session_schedules.cc; the Runs:
// session_run.cc; the state they share: session_impl.h.
#include "onnxfuse/session.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

#include "backend/plan/plan_file.h"
#include "common/stopwatch.h"
#include "load/loader.h"
#include "onnxfuse/error.h"
#include "pipeline/pipeline.h"
#include "pipeline/prepare_model.h"
#include "session/batch_passes.h"
#include "session/execution_options.h"
#include "session/input_check.h"
#include "session/heap_reuse.h"
#include "session/primitive_cache.h"
#include "session/session_impl.h"
#include "session/stage_split.h"

namespace onnxfuse {

using session::ShapeSchedule;
using session::ShapeSignature;

InferenceSession::InferenceSession(const std::string& path, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.path = path;
  s.options = options;
  if (options.threads < 0) throw Error(ErrorKind::kUsage, "SessionOptions::threads must be >= 0");
  if (options.max_samples_per_pass < -1)
    throw Error(ErrorKind::kUsage, "SessionOptions::max_samples_per_pass must be >= -1 (-1: never split a batch)");
  if (options.shape_cache_size < 1) throw Error(ErrorKind::kUsage, "SessionOptions::shape_cache_size must be >= 1");
  s.SetThreads();
  session::BoundPrimitiveCache();
  session::KeepFreedMemoryForReuse();

  std::shared_ptr<ShapeSchedule> schedule;
  std::unique_ptr<Graph> graph;
  ShapeSignature signature;  // of `schedule`
  if (IsPlanFile(path)) {
    s.plan_file = true;
    PlanReadOptions read;
    read.keep_weights = true;  // more instances compile from its weights
    read.keep_model = true;    // and schedules at other shapes from its model
    read.input_shapes = options.input_shapes;
    LoadedPlan loaded = ReadPlanFile(path, read);
    if (loaded.model) {
      s.prepare = session::ExecutionOptions(
          loaded.info.fused ? ParseStrategy(loaded.info.strategy) : kDefaultStrategy,
          std::make_shared<const std::vector<Pattern>>(LoadPatterns(options.pattern_dirs)));
      s.groups_fused = loaded.info.fused;
    }
    if (loaded.info.staged) {  // its shapes follow values: every run in stages
      s.staged_source = loaded.model;
      s.staged_all = true;
      for (ValueId v : loaded.model->inputs()) s.inputs.push_back(session::ValueInfoOf(*loaded.model, v));
      for (ValueId v : loaded.model->outputs()) s.outputs.push_back(session::ValueInfoOf(*loaded.model, v));
      return;
    }
    if (loaded.model) {
      s.symbolic.emplace(loaded.model);
      s.packed.SetVaryingDims(VaryingDimsOf(*loaded.model));
      // The stored model is a prepared one: a KV cache's growing dim may turn
      // to stages around it (session_schedules.cc), fused with the plan's fuser.
      s.staged_source = loaded.model;
    }
    s.fused_once = loaded.model != nullptr;
    s.groups_fused = loaded.info.fused;
    s.groups = loaded.fusion;
    s.packed.Add(*loaded.packed);  // the file's weights, and their mapping, for every schedule
    graph = std::move(loaded.graph);
    const Graph& declared = s.symbolic ? s.symbolic->prepared() : *graph;  // with its symbolic dims
    if (s.symbolic && options.max_samples_per_pass >= 0) s.batch_symbol = session::SeparableBatchSymbol(declared);
    for (ValueId v : declared.inputs()) s.inputs.push_back(session::ValueInfoOf(declared, v));
    for (ValueId v : declared.outputs()) s.outputs.push_back(session::ValueInfoOf(declared, v));
    for (const ExecutablePlan::Binding& in : loaded.executable->InputBindings()) signature.push_back(in.dims);
    schedule = std::make_shared<ShapeSchedule>(std::move(graph), std::move(loaded.fusion), loaded.info.fused, &s.packed,
                                               std::make_unique<ExecutablePlan>(std::move(*loaded.executable)),
                                               loaded.info.load_ms);
  } else {
    const auto start = std::chrono::steady_clock::now();
    // Prepared as `run` prepares it (pipeline/prepare_model.h), at every signature.
    // Every strategy matches the library (the pattern regions of postdom and
    // greedy), loaded once for every signature.
    s.prepare = session::ExecutionOptions(options.strategy,
                                          std::make_shared<const std::vector<Pattern>>(LoadPatterns(options.pattern_dirs)));
    s.prepare.load.input_shapes = options.input_shapes;
    // The model as declared: its inputs and outputs, and whether they are fixed.
    graph = std::make_unique<Graph>(LoadModel(path, s.prepare.load));
    for (ValueId v : graph->inputs()) s.inputs.push_back(session::ValueInfoOf(*graph, v));
    for (ValueId v : graph->outputs()) s.outputs.push_back(session::ValueInfoOf(*graph, v));
    const bool fixed = std::all_of(s.inputs.begin(), s.inputs.end(), [](const ValueInfo& in) {
      return in.has_shape && std::all_of(in.dims.begin(), in.dims.end(), [](auto d) { return d >= 0; });
    });
    if (!fixed && options.max_samples_per_pass >= 0) {
      std::string why;
      s.batch_symbol = session::SeparableBatchSymbol(*graph, &why);
      if (s.batch_symbol.empty()) spdlog::debug("{}: a batch runs in one pass: {}", path, why);
    }
    if (fixed) {  // prepared and compiled now, as `run` does, or run in stages
      PreparedModel prepared = PrepareGraph(std::move(*graph), s.prepare);
      if (ShapesFollowValues(*prepared.graph)) {
        s.staged_source = std::move(prepared.graph);
        s.staged_all = true;
      } else {
        for (const ValueInfo& in : s.inputs) signature.push_back(in.dims);
        schedule = std::make_shared<ShapeSchedule>(std::move(prepared.graph), std::move(prepared.fusion), true,
                                                   &s.packed, nullptr, MsSince(start));
      }
    } else {  // prepared and fused now, with its symbolic dims; compiled per shape on its first Run
      try {
        PreparedModel prepared = PrepareGraph(std::move(*graph), s.prepare);
        s.staged_source = std::move(prepared.graph);
        if (HasControlFlow(*s.staged_source)) {
          // An If or Loop decided at run time: prepared again at each shape,
          // where pinned dims may decide it; else run in stages.
          s.fused_once = false;
          spdlog::info("{}: prepared again at each input shape: it has control flow decided at run time", path);
        } else {
          s.groups = std::move(prepared.fusion);
          s.symbolic.emplace(s.staged_source);
          s.packed.SetVaryingDims(VaryingDimsOf(*s.staged_source));
        }
      } catch (const Error& e) {
        // A rewrite that needs a shape the symbolic graph leaves open (an If
        // on a dim, an expansion that needs a rank) may still succeed once
        // the dims are pinned; a model that fails there too fails on its Run.
        if (e.kind() != ErrorKind::kUnsupported && e.kind() != ErrorKind::kInvalidModel) throw;
        s.fused_once = false;
        spdlog::info("{}: prepared again at each input shape: {}", path, e.what());
      }
    }
  }
  if (schedule) s.Insert(signature, std::move(schedule));
}

InferenceSession::~InferenceSession() = default;
InferenceSession::InferenceSession(InferenceSession&&) noexcept = default;
InferenceSession& InferenceSession::operator=(InferenceSession&&) noexcept = default;

const std::vector<ValueInfo>& InferenceSession::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& InferenceSession::outputs() const { return impl_->outputs; }

}  // namespace onnxfuse
