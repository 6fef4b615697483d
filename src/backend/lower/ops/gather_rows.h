// Gather (ONNX Operators.md, Gather-13) of float32 data at indices known only
// at run time, as a kernel of our own: a transformer's embedding lookup (a
// constant table read at the token ids) is on every call's path, where the
// generic host step (host_step.h) would copy the indices and the rows into
// host tensors and the rows again into the plan's buffer.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers Gather node `id` when its data is float32 (a constant, held once for
/// every compile of the session's model, Builder::SharedConst; or an
/// activation, read plain) and its indices an integer activation: one custom
/// step copying whole rows into a fresh plain float32 activation of dims
/// data[:axis] + indices + data[axis+1:]. An index may be negative (counted
/// from the end of the axis); one outside [-n, n) throws Error(kInvalidModel)
/// "<node>: index out of range" before anything is written, as the host
/// evaluator does. Returns false, emitting nothing, for any other Gather (a
/// host step's) and for an empty output.
bool LowerGatherRows(Builder& b, NodeId id);

/// The rows of `x` (read as [outer, n, inner], row-major) at the `count`
/// indices `k`, each in [-n, n) (a negative one counted from the end), into
/// `y` ([outer, count, inner]), OpenMP threads splitting the rows. Both Gather
/// kernels of ours copy through it: this one's, and a constant-index Gather
/// with many runs of indices (slice.cc).
void GatherRows(const float* x, const std::int64_t* k, std::int64_t count, std::int64_t outer, std::int64_t n,
                std::int64_t inner, float* y);

}  // namespace onnxfuse::backend
