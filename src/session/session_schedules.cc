// How each input signature of an InferenceSession gets its schedule: found in
// the LRU cache, waited for while another call compiles it, or made (the
// prepared model at those shapes, compiled, perhaps for passes of a batch),
// and the signatures whose shapes follow values, which run in stages.
#include <algorithm>
#include <chrono>
#include <exception>

#include <spdlog/spdlog.h>

#include "backend/plan/plan_file.h"
#include "common/stopwatch.h"
#include "eval/host_eval.h"
#include "session/batch_passes.h"
#include "session/element_convert.h"
#include "session/session_impl.h"
#include "session/stage_split.h"

namespace onnxfuse {

using session::ShapeSchedule;
using session::ShapeSignature;

namespace {

// The (input, dim) positions where two signatures differ; a rank that
// differs counts as its input's dim -1.
std::vector<std::pair<std::size_t, std::size_t>> ChangedDims(const ShapeSignature& a, const ShapeSignature& b) {
  std::vector<std::pair<std::size_t, std::size_t>> changed;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].size() != b[i].size()) {
      changed.emplace_back(i, static_cast<std::size_t>(-1));
      continue;
    }
    for (std::size_t d = 0; d < a[i].size(); ++d)
      if (a[i][d] != b[i][d]) changed.emplace_back(i, d);
  }
  return changed;
}

}  // namespace

void InferenceSession::Impl::MakeStaged(std::vector<bool> host_nodes) {
  staged = std::make_unique<session::StagedModel>(staged_source, prepare, groups_fused,
                                                  static_cast<std::size_t>(options.shape_cache_size) * 4,
                                                  std::move(host_nodes));
}

session::StagedModel& InferenceSession::Impl::Staged() {
  std::lock_guard<std::mutex> lock(staged_mutex);
  if (!staged) MakeStaged();
  return *staged;
}

bool InferenceSession::Impl::StageAroundChangedDims(const Graph& before, const Graph& after) {
  const Graph& prepared = *staged_source;
  std::vector<bool> host = session::NodesFollowingChangedDims(prepared, session::TypeDims(prepared, before),
                                                              session::TypeDims(prepared, after));
  std::size_t count = 0;
  for (NodeId id = 0; id < prepared.num_nodes(); ++id) {
    if (!host[id]) continue;
    ++count;
    if (!session::FollowsDimCheaply(prepared.node(id)) || !eval::HostEvaluable(prepared.node(id))) return false;
  }
  if (count == 0 || count == prepared.num_nodes() || session::ReadsWeights(prepared, host)) return false;
  {
    std::lock_guard<std::mutex> lock(staged_mutex);
    if (staged) return false;
    MakeStaged(std::move(host));
  }
  spdlog::info("{}: {} of {} nodes follow the dims that changed between calls and read no weights; from now on "
               "they run on the host evaluator, the rest as stages that keep their shapes",
               path, count, prepared.num_nodes());
  std::lock_guard<std::mutex> lock(mutex);
  staged_all = true;
  return true;
}

std::vector<Tensor> InferenceSession::Impl::RunStaged(const NamedInputs& views) {
  session::KnownValues known;
  for (const auto& [name, view] : views) known.emplace(name, session::TensorFromView(name, view));
  std::vector<Tensor> results = Staged().Run(std::move(known));
  std::lock_guard<std::mutex> lock(mutex);
  ++stats.staged_runs;
  return results;
}

InferenceSession::Impl::Loaded InferenceSession::Impl::LoadAt(const ShapeSignature& signature) const {
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

std::shared_ptr<ShapeSchedule> InferenceSession::Impl::Build(const ShapeSignature& signature) {
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
      auto schedule = std::make_shared<ShapeSchedule>(std::move(at.graph), std::move(at.fusion), at.fused, SharedPacked(),
                                                      nullptr, MsSince(start));
      schedule->set_samples_per_pass(per_pass);
      schedule->set_concurrent_passes(passes.concurrent_passes);
      return schedule;
    }
  }
  Loaded at = LoadAt(signature);
  if (RunsStaged(*at.graph)) return nullptr;
  std::shared_ptr<ShapeSchedule> before;  // the last signature's: which dims change between calls
  std::vector<std::pair<std::size_t, std::size_t>> changed;
  if (symbolic && staged_source) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!lru.empty() && lru.front().second->samples_per_pass() == 0) {
      changed = ChangedDims(lru.front().first, signature);
      if (!unstaged_changes.count(changed)) before = lru.front().second;
    }
  }
  if (before) {
    if (StageAroundChangedDims(before->graph(), *at.graph)) return nullptr;  // runs in stages from now on
    std::lock_guard<std::mutex> lock(mutex);
    unstaged_changes.insert(std::move(changed));
  }
  return std::make_shared<ShapeSchedule>(std::move(at.graph), std::move(at.fusion), at.fused, SharedPacked(), nullptr,
                                         MsSince(start));
}

void InferenceSession::Impl::Insert(const ShapeSignature& signature, std::shared_ptr<ShapeSchedule> schedule) {
  lru.emplace_front(signature, std::move(schedule));
  ++stats.compiles;
  while (lru.size() > static_cast<std::size_t>(options.shape_cache_size)) {
    lru.pop_back();
    ++stats.evictions;
  }
}

std::shared_ptr<ShapeSchedule> InferenceSession::Impl::ScheduleFor(const ShapeSignature& signature) {
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
    else if (symbolic) staged_all = true;  // prepared once: its shapes follow values at every signature
    else {
      // Prepared at each signature (control flow its dims may decide): remembered
      // as many as the stage cache keeps, then forgotten and prepared again.
      if (staged_signatures.size() >= static_cast<std::size_t>(options.shape_cache_size) * 4) staged_signatures.clear();
      staged_signatures.insert(signature);
    }
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

}  // namespace onnxfuse
