// InferenceSession: load or replay, one compiled schedule per input-shape
// signature in an LRU cache, a pool of instances per schedule (shape_schedule.h).
#include "onnxfuse/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/omp_team.h"
#include "backend/lower/core/lowered_ops.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "pipeline/pipeline.h"
#include "backend/plan/plan_file.h"
#include "pipeline/prepare_model.h"
#include "session/batch_passes.h"
#include "session/element_convert.h"
#include "session/input_check.h"
#include "session/pass_runner.h"
#include "session/shape_schedule.h"
#include "load/shape_model.h"

namespace onnxfuse {

using session::ShapeSchedule;
using session::ShapeSignature;

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Team size for the instances of `schedule` on this thread: 1 when its
// passes run at once, else 0 (the session's, already set).
int TeamFor(const ShapeSchedule& schedule) { return schedule.concurrent_passes() > 1 ? 1 : 0; }

// The samples of a call: its first input's leading dim. 0 for a model without
// inputs or whose first input is a scalar, which never runs in passes (they
// need a leading symbolic dim, batch_passes.h).
std::int64_t Samples(const ShapeSignature& signature) {
  return signature.empty() || signature[0].empty() ? 0 : signature[0][0];
}

}  // namespace

struct InferenceSession::Impl {
  std::string path;
  SessionOptions options;
  bool plan_file = false;
  // The model prepared (loaded, rewritten, fused) once, with its symbolic
  // dims, its groups and whether they are fused: the graph of a new input
  // shape is this one with the shapes inferred again (load/shape_model.h),
  // lowered with the same groups. A plan file of format 3: its stored model
  // and groups. Empty for a version 2 plan (it has one shape), and for a
  // model that prepares only with its dims pinned (logged), which is
  // prepared again at each shape (fused_once false).
  std::optional<ShapeModel> symbolic;
  FusionPlan groups;
  bool groups_fused = true;
  bool fused_once = true;
  // How a .onnx model is prepared, at each signature's pinned shapes (the
  // pattern library loaded once, in the constructor).
  PrepareOptions prepare;
  std::vector<ValueInfo> inputs, outputs;
  // The leading dim's symbol when the model computes each of its samples on
  // its own (batch_passes.h): a large batch may then run in passes.
  std::string batch_symbol;
  session::SharedPackedConstants packed;

  mutable std::mutex mutex;  // guards lru, stats, step_bytes_at_one
  std::list<std::pair<ShapeSignature, std::shared_ptr<ShapeSchedule>>> lru;  // most recent first
  SessionStats stats;
  std::map<ShapeSignature, std::shared_future<std::shared_ptr<ShapeSchedule>>> building;  // compiles under way
  // Bytes of the largest step at one sample, by the signature at batch 1:
  // what a batch's passes are sized from (Build), measured once.
  std::map<ShapeSignature, std::int64_t> step_bytes_at_one;

  void SetThreads() const {
    // oneDNN's OpenMP build fixes a primitive's team when it is created, our
    // kernels read it when they run; it is per calling thread.
    if (options.threads > 0) omp_set_num_threads(options.threads);
  }

  // The OpenMP team of one call: SessionOptions::threads, or OpenMP's default.
  int TeamSize() const { return options.threads > 0 ? options.threads : omp_get_max_threads(); }

  struct Loaded {
    std::unique_ptr<Graph> graph;
    FusionPlan fusion;
    bool fused = true;
  };

  // The graph of `signature` and its groups: the model prepared once with
  // its shapes inferred again; else (!fused_once) the model prepared
  // with every not-fixed input dim pinned to the signature's, as `run
  // --input-shape` does.
  Loaded LoadAt(const ShapeSignature& signature) const {
    if (symbolic) {
      std::map<std::string, std::vector<std::int64_t>> shapes;
      for (std::size_t i = 0; i < inputs.size(); ++i) shapes[inputs[i].name] = signature[i];
      PlanGraph at = PlanModelAt(*symbolic, groups, shapes);
      return {std::move(at.graph), std::move(at.fusion), groups_fused};
    }
    if (plan_file)  // a version 2 plan; CheckShapes let its open dims through
      throw Error(ErrorKind::kUsage, path + ": this plan (format version 2) runs only at the input shapes it was "
                                            "built with; rebuild it with this onnx-fuse to run it at others");
    PrepareOptions at = prepare;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ValueInfo& in = inputs[i];
      const bool fixed = in.has_shape && std::all_of(in.dims.begin(), in.dims.end(), [](auto d) { return d >= 0; });
      if (!fixed) at.load.input_shapes[in.name] = signature[i];
    }
    PreparedModel prepared = PrepareModel(path, at);
    return {std::move(prepared.graph), std::move(prepared.fusion), true};
  }

  // The schedule of `signature`: compiled at it, or, for a batch of a
  // separable model whose largest step outgrows the pass budget at the whole
  // batch, at the samples of one pass, those passes perhaps run at once
  // (batch_passes.h, PlanPasses; the model loaded at one sample to measure
  // that step, once per shape of the other dims).
  std::shared_ptr<ShapeSchedule> Build(const ShapeSignature& signature) {
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t batch = batch_symbol.empty() ? 0 : signature[0][0];
    if (batch > 1) {
      const ShapeSignature at_one = WithBatch(signature, 1);
      std::optional<Loaded> one;
      std::int64_t step = 0;
      {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = step_bytes_at_one.find(at_one);
        if (it != step_bytes_at_one.end()) step = it->second;
      }
      if (step == 0) {  // measured once per shape of the other dims
        one = LoadAt(at_one);
        step = std::max<std::int64_t>(1, session::LargestStepBytes(*one->graph));
        std::lock_guard<std::mutex> lock(mutex);
        step_bytes_at_one[at_one] = step;
      }
      const session::PassPlan passes = session::PlanPasses(batch, step, session::PassBudgetBytes(),
                                                           options.max_samples_per_pass, TeamSize());
      if (const std::int64_t per_pass = passes.samples_per_pass; per_pass > 0) {
        Loaded at = per_pass == 1 && one ? std::move(*one) : LoadAt(WithBatch(signature, per_pass));
        OmpTeam compile_team(passes.concurrent_passes > 1 ? 1 : 0);
        auto schedule = std::make_shared<ShapeSchedule>(std::move(at.graph), std::move(at.fusion), at.fused, &packed,
                                                        nullptr, MsSince(start));
        schedule->set_samples_per_pass(per_pass);
        schedule->set_concurrent_passes(passes.concurrent_passes);
        return schedule;
      }
    }
    Loaded at = LoadAt(signature);
    return std::make_shared<ShapeSchedule>(std::move(at.graph), std::move(at.fusion), at.fused, &packed, nullptr,
                                           MsSince(start));
  }

  // `signature` with the batch symbol's dim (every input's dim 0) set to `samples`.
  static ShapeSignature WithBatch(ShapeSignature signature, std::int64_t samples) {
    for (auto& dims : signature) dims[0] = samples;
    return signature;
  }

  void Insert(const ShapeSignature& signature, std::shared_ptr<ShapeSchedule> schedule) {
    lru.emplace_front(signature, std::move(schedule));
    ++stats.compiles;
    while (lru.size() > static_cast<std::size_t>(options.shape_cache_size)) {
      lru.pop_back();
      ++stats.evictions;
    }
  }

  std::shared_ptr<ShapeSchedule> ScheduleFor(const ShapeSignature& signature) {
    // Compiled outside the lock: Runs at cached shapes go on meanwhile. A call
    // missing on a shape another call is compiling waits for that schedule.
    std::promise<std::shared_ptr<ShapeSchedule>> promise;
    {
      std::unique_lock<std::mutex> lock(mutex);
      for (auto it = lru.begin(); it != lru.end(); ++it)
        if (it->first == signature) {
          lru.splice(lru.begin(), lru, it);
          ++stats.cache_hits;
          return lru.front().second;
        }
      if (auto it = building.find(signature); it != building.end()) {
        std::shared_future<std::shared_ptr<ShapeSchedule>> pending = it->second;
        ++stats.cache_hits;
        lock.unlock();
        return pending.get();  // rethrows that compile's error
      }
      building.emplace(signature, promise.get_future().share());
    }
    try {
      SetThreads();
      std::shared_ptr<ShapeSchedule> schedule = Build(signature);
      std::lock_guard<std::mutex> lock(mutex);
      Insert(signature, schedule);
      building.erase(signature);
      promise.set_value(schedule);
      return schedule;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      building.erase(signature);
      promise.set_exception(std::current_exception());
      throw;
    }
  }

  // What both Runs start with, in this order: the call's team size set
  // before anything compiles (a schedule, or another instance of one, made by
  // this call creates its primitives for it), the inputs checked, the
  // schedule found or made, an instance of it leased for the call.
  struct Call {
    Call(Impl& s, const NamedInputs& inputs)
        : signature((s.SetThreads(), session::CheckInputs(s.inputs, inputs))),
          schedule(s.ScheduleFor(signature)),
          team(TeamFor(*schedule)),
          lease(schedule->Acquire()),
          bindings(lease.plan().OutputBindings()) {}
    const ShapeSignature signature;
    const std::shared_ptr<ShapeSchedule> schedule;
    OmpTeam team;
    ShapeSchedule::Lease lease;
    const std::vector<ExecutablePlan::Binding> bindings;
  };

  // Output `name`'s index in the plan's outputs; Error(kUsage) when none.
  static std::size_t OutputIndex(const std::vector<ExecutablePlan::Binding>& bindings, const std::string& name) {
    for (std::size_t i = 0; i < bindings.size(); ++i)
      if (bindings[i].name == name) return i;
    std::string list;
    for (const auto& b : bindings) list += (list.empty() ? "" : ", ") + b.name;
    throw Error(ErrorKind::kUsage, "unknown output '" + name + "'; the model's outputs are: " + list);
  }
};

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
    if (loaded.model) s.symbolic.emplace(loaded.model);
    s.fused_once = loaded.model != nullptr;
    s.groups_fused = loaded.info.fused;
    s.groups = loaded.fusion;
    s.packed.Add(loaded.packed->by_key);  // the file's weights, for every schedule
    graph = std::move(loaded.graph);
    const Graph& declared = s.symbolic ? s.symbolic->prepared() : *graph;  // with its symbolic dims
    if (s.symbolic && options.max_samples_per_pass >= 0) s.batch_symbol = session::SeparableBatchSymbol(declared);
    for (ValueId v : declared.inputs()) s.inputs.push_back(session::ValueInfoOf(declared, v));
    for (ValueId v : declared.outputs()) s.outputs.push_back(session::ValueInfoOf(declared, v));
    for (const ExecutablePlan::Binding& in : loaded.executable.InputBindings()) signature.push_back(in.dims);
    schedule = std::make_shared<ShapeSchedule>(std::move(graph), std::move(loaded.fusion), loaded.info.fused, &s.packed,
                                               std::make_unique<ExecutablePlan>(std::move(loaded.executable)),
                                               loaded.info.load_ms);
  } else {
    const auto start = std::chrono::steady_clock::now();
    // Prepared as `run` prepares it (pipeline/prepare_model.h), at every signature.
    s.prepare.target = Target::kExecutable;
    s.prepare.load.input_shapes = options.input_shapes;
    s.prepare.fusion.strategy = options.strategy;
    // Every strategy matches the library (the pattern regions of postdom and greedy).
    s.prepare.fusion.patterns = std::make_shared<const std::vector<Pattern>>(LoadPatterns(options.pattern_dirs));
    s.prepare.lowers = backend::LowersOp;
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
    if (fixed) {  // prepared and compiled now, as `run` does
      PreparedModel prepared = PrepareGraph(std::move(*graph), s.prepare);
      for (const ValueInfo& in : s.inputs) signature.push_back(in.dims);
      schedule = std::make_shared<ShapeSchedule>(std::move(prepared.graph), std::move(prepared.fusion), true,
                                                 &s.packed, nullptr, MsSince(start));
    } else {  // prepared and fused now, with its symbolic dims; compiled per shape on its first Run
      try {
        PreparedModel prepared = PrepareGraph(std::move(*graph), s.prepare);
        s.groups = std::move(prepared.fusion);
        s.symbolic.emplace(std::shared_ptr<const Graph>(std::move(prepared.graph)));
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

std::vector<Tensor> InferenceSession::Run(const NamedInputs& inputs, const std::vector<std::string>& output_names) {
  Impl::Call call(*impl_, inputs);
  const ShapeSignature& signature = call.signature;
  ShapeSchedule& schedule = *call.schedule;
  ExecutablePlan& plan = call.lease.plan();
  const std::vector<ExecutablePlan::Binding>& bindings = call.bindings;
  std::vector<std::size_t> wanted;
  for (const std::string& name : output_names) wanted.push_back(Impl::OutputIndex(bindings, name));
  if (output_names.empty())
    for (std::size_t i = 0; i < bindings.size(); ++i) wanted.push_back(i);

  std::vector<Tensor> outputs(wanted.size());
  if (schedule.samples_per_pass() > 0)  // filled pass by pass: every output leads with the batch
    for (std::size_t k = 0; k < wanted.size(); ++k)
      outputs[k] = session::BatchOutput(bindings[wanted[k]], signature[0][0]);
  auto collect = [&](const ExecutablePlan& ran, std::int64_t pass, std::int64_t passes) {
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      if (passes == 1) {
        outputs[k] = ran.OutputTensor(wanted[k]);
        continue;
      }
      Tensor& out = outputs[k];
      const bool wide = out.elem_type == onnx::TensorProto::INT64;
      const std::size_t rows = (wide ? out.int_data.size() : out.data.size()) / static_cast<std::size_t>(passes);
      const std::size_t bytes = rows * (wide ? sizeof(std::int64_t) : sizeof(float));
      char* base = wide ? reinterpret_cast<char*>(out.int_data.data()) : reinterpret_cast<char*>(out.data.data());
      std::memcpy(base + static_cast<std::size_t>(pass) * bytes, ran.OutputBuffer(wanted[k]), bytes);
    }
  };
  session::RunPasses(plan, schedule, inputs, Samples(signature), collect);
  return outputs;
}

void InferenceSession::Run(const NamedInputs& inputs, const std::map<std::string, MutableTensorView>& outputs) {
  Impl::Call call(*impl_, inputs);
  const ShapeSignature& signature = call.signature;
  ShapeSchedule& schedule = *call.schedule;
  ExecutablePlan& plan = call.lease.plan();
  const std::vector<ExecutablePlan::Binding>& bindings = call.bindings;
  // Everything about the caller's buffers is checked before anything runs or is written.
  std::vector<std::pair<std::size_t, const MutableTensorView*>> targets;
  for (const auto& [name, view] : outputs) {
    const std::size_t i = Impl::OutputIndex(bindings, name);
    const ExecutablePlan::Binding& out = bindings[i];
    std::vector<std::int64_t> dims = out.constant ? out.constant->dims : out.dims;
    if (schedule.samples_per_pass() > 0) dims[0] = signature[0][0];  // the whole batch, over the passes
    const auto type = static_cast<ElementType>(out.data_type);
    if (view.dtype != type)
      throw Error(ErrorKind::kUsage, "output '" + name + "' is " + ElementTypeName(type) + ", the buffer is " +
                                         ElementTypeName(view.dtype));
    if (view.shape != dims)
      throw Error(ErrorKind::kUsage, "output '" + name + "' has shape " + session::ShapeText(dims) +
                                         " at these inputs, the buffer " + session::ShapeText(view.shape));
    if (view.data == nullptr && view.NumElements() > 0)
      throw Error(ErrorKind::kUsage, "output '" + name + "' has no buffer (a null pointer)");
    targets.emplace_back(i, &view);
  }
  auto collect = [&](const ExecutablePlan& ran, std::int64_t pass, std::int64_t passes) {
    for (const auto& [i, view] : targets) {
      const ExecutablePlan::Binding& out = bindings[i];
      const void* src = ran.OutputBuffer(i);
      if (out.constant)
        src = out.constant->elem_type == onnx::TensorProto::INT64 ? static_cast<const void*>(out.constant->int_data.data())
                                                                  : static_cast<const void*>(out.constant->data.data());
      const std::int64_t count = view->NumElements() / passes;  // this pass's rows
      char* dst = static_cast<char*>(view->data) + static_cast<std::size_t>(pass * count) * ElementSize(view->dtype);
      session::NarrowFromStorage(view->dtype, src, count, dst);
    }
  };
  session::RunPasses(plan, schedule, inputs, Samples(signature), collect);
}

PlanStats InferenceSession::PlanStatsFor(const std::map<std::string, std::vector<std::int64_t>>& input_shapes) {
  return impl_->ScheduleFor(session::CheckShapes(impl_->inputs, input_shapes))->stats();
}

SessionStats InferenceSession::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  SessionStats stats = impl_->stats;
  stats.cached_shapes = static_cast<int>(impl_->lru.size());
  stats.fused_once = impl_->fused_once;
  stats.plan_instances = 0;
  for (const auto& [signature, schedule] : impl_->lru) {
    stats.plan_instances += schedule->instances();
    CachedShape shape;
    for (std::size_t i = 0; i < signature.size() && i < impl_->inputs.size(); ++i)
      shape.input_shapes[impl_->inputs[i].name] = signature[i];
    shape.load_ms = schedule->load_ms();
    shape.plan = schedule->stats();
    shape.compile_ms = shape.plan.compile_ms;
    shape.samples_per_pass = schedule->samples_per_pass();
    shape.concurrent_passes = schedule->concurrent_passes();
    stats.shapes.push_back(std::move(shape));
  }
  return stats;
}

}  // namespace onnxfuse
