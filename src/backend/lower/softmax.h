// Softmax and LogSoftmax (backend/lower/softmax.cc).
#pragma once

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// Softmax (softmax_forward) over a plain buffer and LogSoftmax on our own
/// kernel (backend/kernels/log_softmax.h); before opset 13 over the input
/// coerced to 2-D at `axis`.
void EmitSoftmax(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
