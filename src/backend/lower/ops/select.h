// Where on float32 data (ONNX Operators.md, Where-16) as a kernel of our own
// (backend/kernels/select.h): attention masks (GPT-2's causal mask selects
// between the scores and -inf) are on the hot path, where the generic host
// step (host_step.h) would evaluate element by element in double.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers Where node `id` when x and y are float32 (activations or constants)
/// and cond a bool activation or constant: one custom step writing a fresh
/// plain float32 activation of the broadcast dims. Returns false, emitting
/// nothing, for other Where nodes (integer x, y: a host step's).
bool LowerWhere(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
