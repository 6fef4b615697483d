// Pooling (backend/lower/ops/pool.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// MaxPool, AveragePool, GlobalMaxPool as pooling_v2, or our own max pooling
/// on channel-blocked and channels-last data; GlobalAveragePool as
/// EmitSpatialMean (spatial_mean.h).
void EmitPool(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
