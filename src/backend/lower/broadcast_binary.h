// Add, Sub, Mul and Div on float32 whose operands both broadcast
// (backend/kernels/broadcast_binary.h): no input has the output's dims, so
// oneDNN's binary primitive (binary.h, whose src0 must) cannot run the node.
// RAFT's per-sample coordinate offsets ([256,1,1,2] + [1,7,7,2]) are 44 such
// Adds; as host steps (host_step.h, element by element in double) they took
// 240 ms of its 580.
#pragma once

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// Lowers Add, Sub, Mul or Div node `id` when both inputs are float32
/// (activations or constants) and at least one is an activation: one custom
/// step writing a fresh plain float32 activation of the broadcast dims.
/// Returns false, emitting nothing, for any other node.
/// Throws Error(kUnsupported) naming the node when the dims do not broadcast.
bool LowerBroadcastBinary(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
