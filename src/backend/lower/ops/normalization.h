// The ONNX normalization ops LayerNormalization and InstanceNormalization
// (backend/lower/ops/normalization.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// LayerNormalization (opset 17) as our LayerNorm kernel over a 2-D view;
/// InstanceNormalization as our InstanceNorm kernel over an [N*C, spatial] view.
void EmitLayerNormalization(Builder& b, NodeId node);
void EmitInstanceNormalization(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
