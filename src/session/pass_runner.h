// Running one call's inputs through a shape's schedule: the inputs fed into a
// leased instance's arena, and a batch split into passes (batch_passes.h) run
// one after another or several at once on helper threads.
#pragma once

#include <cstdint>
#include <functional>

#include "backend/runtime/executor.h"
#include "onnxfuse/session.h"
#include "ir/tensor_io.h"
#include "session/shape_schedule.h"

namespace onnxfuse::session {

/// Fills `plan`'s input buffers from the views (one conversion into the arena,
/// no other copy). Throws Error(kUsage) when a view's shape is not the one the
/// plan was compiled at (shape inference pinned another).
void FeedInputs(ExecutablePlan& plan, const NamedInputs& views);

/// The inputs of pass `pass` of `samples` samples each: views of `inputs` from
/// sample pass * samples on (every input leads with the batch). No copy.
NamedInputs PassInputs(const NamedInputs& inputs, std::int64_t samples, std::int64_t pass);

/// An owned output of `batch` samples for binding `out` of a schedule that
/// runs in passes (dims[0] = batch, the rest as bound), in its storage type
/// (StorageTypeOf), zero-filled, to be filled pass by pass.
Tensor BatchOutput(const ExecutablePlan::Binding& out, std::int64_t batch);

/// Called after each pass with the instance that ran it, the pass's index and
/// the number of passes, from the thread that ran it.
using CollectPass = std::function<void(const ExecutablePlan&, std::int64_t, std::int64_t)>;

/// Runs `inputs` (`batch` samples) through `schedule`: once on `plan` (an
/// instance leased by the caller), or once per pass of its samples_per_pass,
/// concurrent_passes at a time: the others on helper threads, each leasing
/// an instance of its own on an OpenMP team of one thread. Rethrows the first
/// error of any pass (FeedInputs', a step's) once every thread has stopped.
void RunPasses(ExecutablePlan& plan, ShapeSchedule& schedule, const NamedInputs& inputs, std::int64_t batch,
               const CollectPass& collect);

}  // namespace onnxfuse::session
