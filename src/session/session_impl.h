// InferenceSession's state (include/onnxfuse/session.h), private to
// src/session/: what the constructor prepares (session.cc), how each input
// signature gets its schedule or runs in stages (session_schedules.cc), and
// what a Run starts with (Call; the Runs: session_run.cc).
#pragma once

#include <omp.h>

#include <cstdint>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/omp_team.h"
#include "fuse/fusion_plan.h"
#include "load/shape_model.h"
#include "onnxfuse/error.h"
#include "onnxfuse/session.h"
#include "pipeline/prepare_model.h"
#include "session/input_check.h"
#include "session/shape_schedule.h"
#include "session/staged_model.h"

namespace onnxfuse {

struct InferenceSession::Impl {
  using ShapeSchedule = session::ShapeSchedule;
  using ShapeSignature = session::ShapeSignature;

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
  // `packed` for the schedules of the model prepared once (the constants'
  // keys name nodes by index, the same in every graph PlanModelAt makes), or
  // nullptr for a model prepared again at each signature, whose graphs
  // differ (a Scan unrolled at one batch and not at another).
  session::SharedPackedConstants* SharedPacked() { return fused_once ? &packed : nullptr; }
  // Shapes that follow values, or a KV cache's growing dim (staged_model.h):
  // the prepared graph with its run-time control flow kept (a format 3 plan
  // file's stored model), which the staged model runs; null when the model
  // never needs it (a version 2 plan, a model prepared only per shape).
  std::shared_ptr<const Graph> staged_source;
  bool staged_all = false;  // every signature runs in stages (fixed inputs, shapes that follow values, a KV cache)

  mutable std::mutex mutex;  // guards lru, stats, step_bytes_at_one
  std::list<std::pair<ShapeSignature, std::shared_ptr<ShapeSchedule>>> lru;  // most recent first
  SessionStats stats;
  std::map<ShapeSignature, std::shared_future<std::shared_ptr<ShapeSchedule>>> building;  // compiles under way
  // Bytes of the largest step at one sample, by the signature at batch 1:
  // what a batch's passes are sized from (Build), measured once.
  std::map<ShapeSignature, std::int64_t> step_bytes_at_one;
  // Signatures whose shapes follow values, of a model prepared at each signature
  // (at most 4 x shape_cache_size; a model prepared once sets staged_all instead).
  std::set<ShapeSignature> staged_signatures;
  // Which input dims changed (input, dim) between two signatures when
  // StageAroundChangedDims said no: the nodes following them, and so the
  // answer, are the same the next time those dims change (a text encoder's
  // length changes at every call; its MatMuls read weights).
  std::set<std::vector<std::pair<std::size_t, std::size_t>>> unstaged_changes;
  std::unique_ptr<session::StagedModel> staged;  // made on first use, under staged_mutex
  std::mutex staged_mutex;

  // The staged model (staged_model.h) of `staged_source`, made on first use.
  session::StagedModel& Staged();

  // Makes `staged`: `staged_source` fused as the session's groups are
  // (unfused for an unfused plan file), `4 × shape_cache_size` stages kept,
  // `host_nodes` as StagedModel takes them. Under staged_mutex.
  void MakeStaged(std::vector<bool> host_nodes = {});

  // A KV cache's dim: when the nodes whose dims changed between the graphs
  // of two signatures (`before`: the last schedule's; `after`: the new
  // signature's, loaded but not yet compiled) read no weights, are all
  // of the kinds attention over a cache is made of (FollowsDimCheaply) and
  // the host evaluator runs them, every signature from now on runs in stages
  // around them (session_schedules.cc): the stages keep their shapes, so a
  // new length compiles nothing, not even `after`. False (nothing changes)
  // otherwise, or when the staged model already serves shapes that follow values.
  bool StageAroundChangedDims(const Graph& before, const Graph& after);

  // True when `graph` (at one signature) has shapes that follow values and a
  // staged model can run it.
  bool RunsStaged(const Graph& graph) const { return staged_source && ShapesFollowValues(graph); }

  // The outputs of one staged run, in model order.
  std::vector<Tensor> RunStaged(const NamedInputs& views);

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
  Loaded LoadAt(const ShapeSignature& signature) const;

  // The schedule of `signature`: compiled at it, or, for a batch of a
  // separable model whose largest step outgrows the pass budget at the whole
  // batch, at the samples of one pass, those passes perhaps run at once
  // (batch_passes.h, PlanPasses; the model loaded at one sample to measure
  // that step, once per shape of the other dims). nullptr when the
  // signature's shapes follow values (RunsStaged).
  std::shared_ptr<ShapeSchedule> Build(const ShapeSignature& signature);

  // `signature` with the batch symbol's dim (every input's dim 0) set to `samples`.
  static ShapeSignature WithBatch(ShapeSignature signature, std::int64_t samples) {
    for (auto& dims : signature) dims[0] = samples;
    return signature;
  }

  // Keeps `schedule` as the most recent, evicting beyond shape_cache_size. Under `mutex`.
  void Insert(const ShapeSignature& signature, std::shared_ptr<ShapeSchedule> schedule);

  // The schedule of `signature`, or nullptr when it runs in stages.
  std::shared_ptr<ShapeSchedule> ScheduleFor(const ShapeSignature& signature);

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

  // Output `name`'s index among `items` (the plan's output bindings, or the
  // model's outputs: anything with a name); Error(kUsage) when none.
  template <typename Named>
  static std::size_t OutputIndex(const std::vector<Named>& items, const std::string& name) {
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].name == name) return i;
    std::string list;
    for (const auto& item : items) list += (list.empty() ? "" : ", ") + item.name;
    throw Error(ErrorKind::kUsage, "unknown output '" + name + "'; the model's outputs are: " + list);
  }

  // Team size for the instances of `schedule` on this thread: 1 when its
  // passes run at once, else 0 (the session's, already set).
  static int TeamFor(const ShapeSchedule& schedule) { return schedule.concurrent_passes() > 1 ? 1 : 0; }
};

}  // namespace onnxfuse
