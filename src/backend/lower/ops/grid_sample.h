// GridSample (ONNX Operators.md, GridSample-16) on float32 2-D images as a
// kernel of our own (backend/kernels/grid_sample.h), for the bilinear and
// nearest modes. The host step (host_step.h) it replaces evaluated each
// sample in double with the attributes looked up per sample: RAFT's 48
// GridSample nodes took 55 ms an inference so.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers GridSample node `id` when X is a float32 activation [N, C, H, W],
/// grid a float32 activation or constant [N, H_out, W_out, 2] and mode
/// bilinear or nearest: one custom step writing a fresh plain
/// [N, C, H_out, W_out] activation. Returns false, emitting nothing, for any
/// other node (bicubic, other ranks: the host step's).
/// Throws Error(kInvalidModel) naming the node for an unknown padding_mode or
/// a grid whose shape does not fit X.
bool LowerGridSample(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
