// Pad, Slice, Split and Gather (backend/lower/ops/slice.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Pad, Slice (any steps), Split (constant sizes) and Gather (constant indices)
/// of run-time tensors; false when `node` is none of these.
/// Fused, a Slice with steps >= 1, each Split output and a Gather of one run
/// of indices are views of the input's buffer (Builder::NewView), no step.
bool LowerSlice(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
