// Pooling (backend/lower/pool.cc).
#pragma once

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool as pooling_v2, or
/// our own max and global average pooling on channel-blocked and
/// channels-last data.
void EmitPool(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
