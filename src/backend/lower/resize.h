// Resize (backend/lower/resize.cc).
#pragma once

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// Resize (opsets 10-18; nearest and linear) as resampling_forward where
/// oneDNN's coordinate mapping equals ONNX's for every output index.
void EmitResize(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
