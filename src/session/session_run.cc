// InferenceSession's Runs: every output as owned tensors, or written into
// caller buffers; a schedule's statistics; the session's counters.
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "session/element_convert.h"
#include "session/input_check.h"
#include "session/pass_runner.h"
#include "session/session_impl.h"

namespace onnxfuse {

using session::ShapeSchedule;
using session::ShapeSignature;

namespace {

// The samples of a call: its first input's leading dim. 0 for a model without
// inputs or whose first input is a scalar, which never runs in passes (they
// need a leading symbolic dim, batch_passes.h).
std::int64_t Samples(const ShapeSignature& signature) {
  return signature.empty() || signature[0].empty() ? 0 : signature[0][0];
}

}  // namespace

std::vector<Tensor> InferenceSession::Run(const NamedInputs& inputs, const std::vector<std::string>& output_names) {
  Impl::Call call(*impl_, inputs);
  if (!call.schedule) {  // in stages: every output computed, the named ones returned
    std::vector<Tensor> all = impl_->RunStaged(inputs);
    if (output_names.empty()) return all;
    std::vector<Tensor> outputs;
    for (const std::string& name : output_names) outputs.push_back(all[Impl::OutputIndex(impl_->outputs, name)]);
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
