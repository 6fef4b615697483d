// One input-shape signature of a session: its loaded graph, fusion groups and
// a pool of compiled instances of the same schedule, so that concurrent Runs
// at that shape never share an activation arena.
//
// Why a pool of instances rather than a per-call arena: an ExecutablePlan binds
// each step's oneDNN memories and each custom kernel's argument pointers into
// its arena once, at compile time (src/backend/runtime/executor.cc), which is
// what makes a Run cheap; a per-call arena would rebind every step on every
// call. An instance costs one compile (milliseconds: its prepacked weights are
// reused from SharedPackedConstants, not packed again) plus its arena, and is
// only made when more calls than instances run at once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/lower/core/packed_constants.h"
#include "backend/runtime/executor.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "ir/varying_dims.h"

namespace onnxfuse::session {

/// The prepacked constants of every plan a session compiles, by Builder key
/// ("<node>:<op>:<argument>"): each compile replays them (a constant whose
/// layout is unchanged is the same memory, not a copy) and adds those it
/// packed; and the initializers host steps keep (PackedConstants::decoded), likewise.
/// Thread-safe.
class SharedPackedConstants {
 public:
  /// ExecutablePlan::Compile(graph, fusion, {fuse, replaying the shared map}),
  /// keeping the oneDNN implementation `implementations` names for a step
  /// ("<kind>:<anchor node>" -> impl, as a plan file stores them) instead of
  /// choosing again (src/backend/lower/core/impl_choice.cc).
  /// Throws what Compile throws.
  ExecutablePlan Compile(const Graph& graph, const FusionPlan& fusion, bool fuse,
                         const std::map<std::string, std::string>& implementations = {});
  /// Adds constants packed elsewhere (a plan file's, LoadedPlan::packed),
  /// keeping any held under the same key, and what their bytes lie in (the
  /// mapped plan file): every plan compiled from here on keeps it alive, so
  /// the file stays mapped while any schedule uses its constants, whichever
  /// schedules the shape cache evicts.
  void Add(const backend::PackedConstants& constants);
  /// Distinct constants held.
  std::size_t size() const;
  /// The dims that change between the shapes this session compiles
  /// (VaryingDimsOf its prepared model's symbolic graph), given to every
  /// compile from here on (CompileOptions::varying_dims).
  void SetVaryingDims(VaryingDims varying);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, dnnl::memory> by_key_;
  std::map<std::string, std::shared_ptr<const Tensor>> decoded_;
  std::map<std::string, bool> facts_;
  std::shared_ptr<const void> storage_;
  std::shared_ptr<const VaryingDims> varying_;
};

class ShapeSchedule {
 public:
  /// `graph` keeps its weights (more instances compile from it); `packed`:
  /// the constants shared with the schedules of the same prepared model
  /// (their keys name nodes by index), or nullptr for a graph prepared on its
  /// own, whose instances then share only their own; `first`, when given, is
  /// an already compiled instance (a plan file's). `load_ms`: the
  /// wall-clock ms it took to load `graph` and fuse it (or apply a plan's
  /// groups). `implementations`: the oneDNN implementation to keep per step
  /// ("<kind>:<anchor node>", those of a schedule of the same nodes at other
  /// shapes), where it is one of the candidates.
  ShapeSchedule(std::unique_ptr<Graph> graph, FusionPlan fusion, bool fuse, SharedPackedConstants* packed,
                std::unique_ptr<ExecutablePlan> first = nullptr, double load_ms = 0,
                const std::map<std::string, std::string>& implementations = {});

  /// Exclusive use of one instance until destroyed (returned to the pool).
  class Lease {
   public:
    Lease(ShapeSchedule* owner, std::unique_ptr<ExecutablePlan> plan) : owner_(owner), plan_(std::move(plan)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    ExecutablePlan& plan() { return *plan_; }

   private:
    ShapeSchedule* owner_;
    std::unique_ptr<ExecutablePlan> plan_;
  };

  /// An idle instance, or a newly compiled one when all are in use. Throws what Compile throws.
  Lease Acquire();

  const Graph& graph() const { return *graph_; }
  /// The schedule's statistics (the same for every instance).
  const PlanStats& stats() const { return stats_; }
  /// The implementation of each step ("<kind>:<anchor node>" -> oneDNN's name).
  const std::map<std::string, std::string>& implementations() const { return implementations_; }
  /// The constructor's load_ms (its first compile is stats().compile_ms).
  double load_ms() const { return load_ms_; }
  int instances() const;
  /// Samples of the leading dim each instance computes when the signature it
  /// serves runs as several passes (batch_passes.h); 0: the whole signature.
  std::int64_t samples_per_pass() const { return samples_per_pass_; }
  void set_samples_per_pass(std::int64_t samples) { samples_per_pass_ = samples; }
  /// Passes run at once, each on its own instance and one OpenMP thread (1:
  /// one after another on the call's team). Instances of a schedule with
  /// more than one are compiled on a team of one thread.
  int concurrent_passes() const { return concurrent_passes_; }
  void set_concurrent_passes(int passes) { concurrent_passes_ = passes; }

 private:
  std::unique_ptr<Graph> graph_;
  FusionPlan fusion_;
  bool fuse_;
  std::unique_ptr<SharedPackedConstants> own_packed_;  // when no shared one is given
  SharedPackedConstants* packed_;
  PlanStats stats_;
  double load_ms_;
  std::int64_t samples_per_pass_ = 0;
  int concurrent_passes_ = 1;
  // The first instance's implementation per step: every instance runs the
  // same kernels, so concurrent Runs give the same numbers as single ones
  // (timing-based choices could otherwise differ by an ulp between compiles).
  std::map<std::string, std::string> implementations_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ExecutablePlan>> idle_;
  int instances_ = 0;
};

}  // namespace onnxfuse::session
