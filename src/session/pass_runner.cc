#include "session/pass_runner.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/omp_team.h"
#include "onnxfuse/error.h"
#include "session/element_convert.h"
#include "session/input_check.h"

namespace onnxfuse::session {

void FeedInputs(ExecutablePlan& plan, const NamedInputs& views) {
  const std::vector<ExecutablePlan::Binding> bindings = plan.InputBindings();
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const TensorView& view = views.at(bindings[i].name);
    if (view.shape != bindings[i].dims)  // shape inference pinned another shape than the call's
      throw Error(ErrorKind::kUsage, "input '" + bindings[i].name + "' of shape " + ShapeText(view.shape) +
                                         " runs as " + ShapeText(bindings[i].dims));
    WidenToStorage(view.dtype, view.data, view.NumElements(), plan.InputBuffer(i));
  }
}

NamedInputs PassInputs(const NamedInputs& inputs, std::int64_t samples, std::int64_t pass) {
  NamedInputs slices;
  for (const auto& [name, view] : inputs) {
    TensorView slice = view;
    slice.shape[0] = samples;
    const auto bytes = static_cast<std::size_t>(slice.NumElements()) * ElementSize(view.dtype);
    slice.data = static_cast<const char*>(view.data) + static_cast<std::size_t>(pass) * bytes;
    slices.emplace(name, std::move(slice));
  }
  return slices;
}

Tensor BatchOutput(const ExecutablePlan::Binding& out, std::int64_t batch) {
  Tensor t;
  t.name = out.name;
  t.dims = out.dims;
  t.dims[0] = batch;
  t.data_type = out.data_type;
  t.elem_type = StorageTypeOf(out.data_type);
  const auto n = static_cast<std::size_t>(t.NumElements());
  if (t.elem_type == onnx::TensorProto::INT64)
    t.int_data.resize(n);
  else
    t.data.resize(n);
  return t;
}

void RunPasses(ExecutablePlan& plan, ShapeSchedule& schedule, const NamedInputs& inputs, std::int64_t batch,
               const CollectPass& collect) {
  const std::int64_t per_pass = schedule.samples_per_pass();
  const std::int64_t passes = per_pass > 0 ? batch / per_pass : 1;
  std::atomic<std::int64_t> next{0};
  auto work = [&](ExecutablePlan& instance) {
    for (std::int64_t pass = next++; pass < passes; pass = next++) {
      FeedInputs(instance, per_pass > 0 ? PassInputs(inputs, per_pass, pass) : inputs);
      instance.RunSteps();
      collect(instance, pass, passes);
    }
  };
  const auto helpers = static_cast<std::size_t>(std::min<std::int64_t>(schedule.concurrent_passes(), passes) - 1);
  std::vector<std::exception_ptr> errors(helpers + 1);
  std::vector<std::thread> threads;
  for (std::size_t h = 0; h < helpers; ++h)
    threads.emplace_back([&, h] {
      try {
        OmpTeam team(1);
        ShapeSchedule::Lease lease = schedule.Acquire();
        work(lease.plan());
      } catch (...) {
        errors[h + 1] = std::current_exception();
        next = passes;
      }
    });
  try {
    work(plan);
  } catch (...) {
    errors[0] = std::current_exception();
    next = passes;
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace onnxfuse::session
