// Softmax and LogSoftmax (backend/lower/ops/softmax.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Softmax and LogSoftmax on our own row kernels (backend/kernels/softmax.h,
/// log_softmax.h); before opset 13 over the input coerced to 2-D at `axis`.
/// Error(kInvalidModel) for an axis outside the input's rank.
void EmitSoftmax(Builder& b, NodeId node);

/// Softmax -> Log (the SoftmaxLog pattern) as one LogSoftmax pass whose
/// outputs are the log of the float probabilities (LogProbability::kOfFloatSoftmax):
/// exact near 0, never above 0, -inf where Softmax's float result is 0.
/// `log_output` is the Log's output.
void EmitSoftmaxLog(Builder& b, const Node& softmax, ValueId log_output);

}  // namespace onnxfuse::backend
