#include "session/shape_schedule.h"

#include <utility>

namespace onnxfuse::session {

ExecutablePlan SharedPackedConstants::Compile(const Graph& graph, const FusionPlan& fusion, bool fuse,
                                              const std::map<std::string, std::string>& implementations) {
  CompileOptions options(fuse);
  options.packed = std::make_shared<backend::PackedConstants>();
  options.packed->replay = true;  // an empty map is all "recomputed": packed and recorded
  options.packed->implementations = implementations;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    options.packed->by_key = by_key_;
    options.packed->decoded = decoded_;
    options.packed->facts = facts_;
    options.packed->storage = storage_;
    options.varying_dims = varying_;
  }
  ExecutablePlan plan = ExecutablePlan::Compile(graph, fusion, options);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, memory] : options.packed->by_key) by_key_.insert_or_assign(key, memory);
  decoded_.insert(options.packed->decoded.begin(), options.packed->decoded.end());
  facts_.insert(options.packed->facts.begin(), options.packed->facts.end());
  return plan;
}

void SharedPackedConstants::SetVaryingDims(VaryingDims varying) {
  std::lock_guard<std::mutex> lock(mutex_);
  varying_ = std::make_shared<const VaryingDims>(std::move(varying));
}

void SharedPackedConstants::Add(const backend::PackedConstants& constants) {
  std::lock_guard<std::mutex> lock(mutex_);
  by_key_.insert(constants.by_key.begin(), constants.by_key.end());
  if (constants.storage) storage_ = constants.storage;
}

std::size_t SharedPackedConstants::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_key_.size();
}

ShapeSchedule::ShapeSchedule(std::unique_ptr<Graph> graph, FusionPlan fusion, bool fuse,
                             SharedPackedConstants* packed, std::unique_ptr<ExecutablePlan> first, double load_ms,
                             const std::map<std::string, std::string>& implementations)
    : graph_(std::move(graph)),
      fusion_(std::move(fusion)),
      fuse_(fuse),
      own_packed_(packed ? nullptr : std::make_unique<SharedPackedConstants>()),
      packed_(packed ? packed : own_packed_.get()),
      load_ms_(load_ms) {
  if (!first) first = std::make_unique<ExecutablePlan>(packed_->Compile(*graph_, fusion_, fuse_, implementations));
  stats_ = first->stats();
  for (const ScheduleStep& step : first->Schedule())  // a step's label starts with its anchor node's name
    implementations_.emplace(step.kind + ":" + step.label.substr(0, step.label.find('+')), step.impl);
  idle_.push_back(std::move(first));
  instances_ = 1;
}

ShapeSchedule::Lease ShapeSchedule::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<ExecutablePlan> plan = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(plan));
    }
  }
  // Compiled outside the lock: other calls keep taking and returning instances meanwhile.
  auto plan = std::make_unique<ExecutablePlan>(packed_->Compile(*graph_, fusion_, fuse_, implementations_));
  std::lock_guard<std::mutex> lock(mutex_);
  ++instances_;
  return Lease(this, std::move(plan));
}

ShapeSchedule::Lease::~Lease() {
  if (!plan_) return;
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  owner_->idle_.push_back(std::move(plan_));
}

int ShapeSchedule::instances() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return instances_;
}

}  // namespace onnxfuse::session
