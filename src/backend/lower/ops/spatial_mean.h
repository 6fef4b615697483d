// The mean over the spatial axes (backend/lower/ops/spatial_mean.cc).
#pragma once

#include <string>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The mean over axes 2 and up of `src` (dims `in`: [N, C, D1, ...], rank 3 to
/// 5, any layout), as one step labelled `label` of `node`: a plain
/// [N, C, 1, ...] activation. GlobalAveragePool and a ReduceMean over exactly
/// those axes are the same mean (ONNX Operators.md), so both lower through
/// here and a plan gives them the same numbers: our kernel (ChannelMeans,
/// backend/kernels/activation.h) where the fused plan reads a 4-D tensor in a
/// channel-blocked or channels-last layout, oneDNN's reduction_mean on the plain
/// tensor otherwise, and a reorder to plain when every spatial extent is 1 (the mean of one
/// element is that element; oneDNN's reduction refuses a destination that
/// equals its source). Throws UnsupportedError naming `node` when oneDNN has
/// no implementation.
Act EmitSpatialMean(Builder& b, const Node& node, const Arg& src, const Dims& in, const std::string& label);

}  // namespace onnxfuse::backend
