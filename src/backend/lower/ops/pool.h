// Pooling (backend/lower/ops/pool.cc).
#pragma once

#include <optional>
#include <string>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool as pooling_v2, or
/// our own max and global average pooling on channel-blocked and
/// channels-last data.
void EmitPool(Builder& b, NodeId node);

/// The mean over the spatial axes of `src` (dims `in`: 4-D [N, C, H, W]) in a
/// channel-blocked or channels-last layout, as our own kernel (ChannelMeans,
/// backend/kernels/activation.h), one step labelled `label`: a plain
/// [N, C, 1, 1] activation of dims `out`. nullopt, with nothing emitted, for
/// other ranks and layouts. For GlobalAveragePool, and for a ReduceMean over
/// axes 2 and 3 (reduce.cc).
std::optional<Act> EmitOwnGlobalAveragePool(Builder& b, const Arg& src, const Dims& in, const Dims& out,
                                            const std::string& label);

}  // namespace onnxfuse::backend
