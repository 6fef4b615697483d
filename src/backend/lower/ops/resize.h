// Resize (backend/lower/ops/resize.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// True when EmitResize lowers `node` (Resize, or Upsample-9 of an opset-9
/// model, whose inputs are Resize-10's): X an activation and the scales,
/// sizes and (tf_crop_and_resize) roi inputs it reads constants known at
/// build time. Otherwise the node is the host evaluator's (EmitHostStep:
/// run-time scales or sizes, a constant X, Upsample-7's scales attribute).
/// Decides without emitting anything.
bool ResizeOnOneDnn(const Builder& b, const Node& node);

/// Resize (opsets 10-18: nearest, linear, cubic) as resampling_forward where
/// oneDNN's coordinate mapping equals ONNX's for every output index, else as
/// our separable loops (backend/kernels/resize.h). Expects ResizeOnOneDnn;
/// throws Error(kUnsupported) naming the node for attributes it does not take
/// (antialias, keep_aspect_ratio_policy) or an empty output.
void EmitResize(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
