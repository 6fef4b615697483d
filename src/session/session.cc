// InferenceSession: load or replay, one compiled schedule per input-shape
// signature in an LRU cache, a pool of instances per schedule (shape_schedule.h).
#include "onnxfuse/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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
#include "session/stage_split.h"
#include "session/staged_model.h"
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
  // Shapes that follow values (staged_model.h): the prepared graph with its
  // run-time control flow kept, which the staged model runs; null when the
  // model never needs it (a plan file, a model prepared only per shape).
  std::shared_ptr<const Graph> staged_source;
  bool staged_all = false;  // every signature runs in stages (fixed inputs, shapes that follow values)

  mutable std::mutex mutex;  // guards lru, stats, step_bytes_at_one
  std::list<std::pair<ShapeSignature, std::shared_ptr<ShapeSchedule>>> lru;  // most recent first
  SessionStats stats;
  std::map<ShapeSignature, std::shared_future<std::shared_ptr<ShapeSchedule>>> building;  // compiles under way
  // Bytes of the largest step at one sample, by the signature at batch 1:
  // what a batch's passes are sized from (Build), measured once.
  std::map<ShapeSignature, std::int64_t> step_bytes_at_one;
  std::set<ShapeSignature> staged_signatures;  // signatures whose shapes follow values
  std::unique_ptr<session::StagedModel> staged;  // made on first use, under staged_mutex
  std::mutex staged_mutex;

  session::StagedModel& Staged() {
    std::lock_guard<std::mutex> lock(staged_mutex);
    if (!staged)
      staged = std::make_unique<session::StagedModel>(staged_source, prepare, /*fuse=*/true,
                                                      static_cast<std::size_t>(options.shape_cache_size) * 4);
    return *staged;
  }

  // True when `graph` (at one signature) has shapes that follow values and a
  // staged model can run it.
  bool RunsStaged(const Graph& graph) const { return staged_source && session::ShapesFollowValues(graph); }

  // The outputs of one staged run, in model order.
  std::vector<Tensor> RunStaged(const NamedInputs& views) {
    session::KnownValues known;
    for (const auto& [name, view] : views) {
      Tensor t;
      t.name = name;
      t.data_type = static_cast<std::int32_t>(view.dtype);
      t.dims = view.shape;
      const auto count = static_cast<std::size_t>(view.NumElements());
      void* dst = nullptr;
      if (session::StorageOf(view.dtype) == ElementType::kInt64) {
        t.elem_type = onnx::TensorProto::INT64;
        t.int_data.resize(count);
        dst = t.int_data.data();
      } else {
        t.elem_type = onnx::TensorProto::FLOAT;
        t.data.resize(count);
        dst = t.data.data();
      }
      session::WidenToStorage(view.dtype, view.data, view.NumElements(), dst);
      known.emplace(name, std::move(t));
    }
    std::vector<Tensor> results = Staged().Run(known);
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.staged_runs;
    return results;
  }

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
        if (RunsStaged(*one->graph)) return nullptr;
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
    if (RunsStaged(*at.graph)) return nullptr;
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

  // The schedule of `signature`, or nullptr when it runs in stages.
  std::shared_ptr<ShapeSchedule> ScheduleFor(const ShapeSignature& signature) {
    // Compiled outside the lock: Runs at cached shapes go on meanwhile. A call
    // missing on a shape another call is compiling waits for that schedule.
    std::promise<std::shared_ptr<ShapeSchedule>> promise;
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (staged_all || staged_signatures.count(signature)) return nullptr;
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
      if (schedule) Insert(signature, schedule);
      else staged_signatures.insert(signature);
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
  // schedule found or made, an instance of it leased for the call. No
  // schedule: the signature runs in stages (RunStaged).
  struct Call {
    Call(Impl& s, const NamedInputs& inputs)
        : signature((s.SetThreads(), session::CheckInputs(s.inputs, inputs))),
          schedule(s.ScheduleFor(signature)),
          team(schedule ? TeamFor(*schedule) : 0) {
      if (!schedule) return;
      lease.emplace(schedule->Acquire());
      bindings = lease->plan().OutputBindings();
    }
    const ShapeSignature signature;
    const std::shared_ptr<ShapeSchedule> schedule;
    OmpTeam team;
    std::optional<ShapeSchedule::Lease> lease;
    std::vector<ExecutablePlan::Binding> bindings;
  };

  // Output `name`'s index in the model's outputs; Error(kUsage) when none.
  std::size_t ModelOutputIndex(const std::string& name) const {
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].name == name) return i;
    std::string list;
    for (const auto& o : outputs) list += (list.empty() ? "" : ", ") + o.name;
    throw Error(ErrorKind::kUsage, "unknown output '" + name + "'; the model's outputs are: " + list);
  }

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
    // An If or Loop decided only at run time stays, for the staged model.
    s.prepare.keep_run_time_control_flow = true;
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
      if (session::ShapesFollowValues(*prepared.graph)) {
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
        if (session::HasControlFlow(*s.staged_source)) {
          // An If or Loop decided at run time: prepared again at each shape,
          // where pinned dims may decide it; else run in stages.
          s.fused_once = false;
          spdlog::info("{}: prepared again at each input shape: it has control flow decided at run time", path);
        } else {
          s.groups = std::move(prepared.fusion);
          s.symbolic.emplace(s.staged_source);
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

std::vector<Tensor> InferenceSession::Run(const NamedInputs& inputs, const std::vector<std::string>& output_names) {
  Impl::Call call(*impl_, inputs);
  if (!call.schedule) {  // in stages: every output computed, the named ones returned
    std::vector<Tensor> all = impl_->RunStaged(inputs);
    if (output_names.empty()) return all;
    std::vector<Tensor> outputs;
    for (const std::string& name : output_names) outputs.push_back(all[impl_->ModelOutputIndex(name)]);
    return outputs;
  }
  const ShapeSignature& signature = call.signature;
  ShapeSchedule& schedule = *call.schedule;
  ExecutablePlan& plan = call.lease->plan();
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
  // In stages, the outputs are known only once it has run: they are bound as constants.
  std::vector<Tensor> staged;
  if (!call.schedule) {
    staged = impl_->RunStaged(inputs);
    for (const Tensor& t : staged) call.bindings.push_back({t.name, t.dims, t.DataType(), &t});
  }
  const bool in_passes = call.schedule && call.schedule->samples_per_pass() > 0;
  const std::vector<ExecutablePlan::Binding>& bindings = call.bindings;
  // Everything about the caller's buffers is checked before anything is written.
  std::vector<std::pair<std::size_t, const MutableTensorView*>> targets;
  for (const auto& [name, view] : outputs) {
    const std::size_t i = Impl::OutputIndex(bindings, name);
    const ExecutablePlan::Binding& out = bindings[i];
    std::vector<std::int64_t> dims = out.constant ? out.constant->dims : out.dims;
    if (in_passes) dims[0] = signature[0][0];  // the whole batch, over the passes
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
  // Writes pass `pass` of `passes`; `buffer` gives output i's storage when it is not a constant.
  auto collect = [&](const std::function<const void*(std::size_t)>& buffer, std::int64_t pass, std::int64_t passes) {
    for (const auto& [i, view] : targets) {
      const ExecutablePlan::Binding& out = bindings[i];
      const void* src = !out.constant ? buffer(i)
                        : out.constant->elem_type == onnx::TensorProto::INT64
                            ? static_cast<const void*>(out.constant->int_data.data())
                            : static_cast<const void*>(out.constant->data.data());
      const std::int64_t count = view->NumElements() / passes;  // this pass's rows
      char* dst = static_cast<char*>(view->data) + static_cast<std::size_t>(pass * count) * ElementSize(view->dtype);
      session::NarrowFromStorage(view->dtype, src, count, dst);
    }
  };
  if (!call.schedule) return collect([](std::size_t) -> const void* { return nullptr; }, 0, 1);
  session::RunPasses(call.lease->plan(), *call.schedule, inputs, Samples(signature),
                     [&](const ExecutablePlan& ran, std::int64_t pass, std::int64_t passes) {
                       collect([&](std::size_t i) { return ran.OutputBuffer(i); }, pass, passes);
                     });
}

PlanStats InferenceSession::PlanStatsFor(const std::map<std::string, std::vector<std::int64_t>>& input_shapes) {
  const std::shared_ptr<ShapeSchedule> schedule = impl_->ScheduleFor(session::CheckShapes(impl_->inputs, input_shapes));
  if (!schedule)
    throw Error(ErrorKind::kUsage, impl_->path + ": at these input shapes the model runs in stages, whose shapes "
                                                 "follow values; it has no one schedule (see stats())");
  return schedule->stats();
}

SessionStats InferenceSession::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  SessionStats stats = impl_->stats;
  stats.cached_shapes = static_cast<int>(impl_->lru.size());
  stats.fused_once = impl_->fused_once;
  std::lock_guard<std::mutex> staged_lock(impl_->staged_mutex);
  if (impl_->staged) {
    const session::StagedStats staged = impl_->staged->stats();
    stats.stages_compiled = staged.stages_compiled;
    stats.stage_hits = staged.stage_hits;
    stats.nodes_evaluated = staged.nodes_evaluated;
  }
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
