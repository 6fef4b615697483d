// Add, Sub, Mul and Div on float32 whose operands both broadcast
// (backend/kernels/broadcast_binary.h): no input has the output's dims, so
// oneDNN's binary primitive (binary.h, whose src0 must) cannot run the node.
// Max and Min of two float32 inputs always run here, NaN kept.
// RAFT's per-sample coordinate offsets ([256,1,1,2] + [1,7,7,2]) are 44 such
// Adds; as host steps (host_step.h, element by element in double) they took
// 240 ms of its 580.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers Add, Sub, Mul, Div, Max or Min node `id` of two float32 inputs
/// (activations or constants, at least one an activation; for Add, Sub, Mul
/// and Div none an activation of the output's dims: oneDNN's binary takes
/// those) to one custom step
/// writing a fresh plain float32 activation of the broadcast dims. Returns
/// false, emitting nothing, for any other node.
/// Throws Error(kUnsupported) naming the node when the dims do not broadcast.
bool LowerBroadcastBinary(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
