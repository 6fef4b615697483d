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

/// True for an Add, Sub, Mul or Div of float32 whose input of the output's
/// dims is a plain activation, and whose other input broadcasts in a way
/// oneDNN 2.6's binary runs only on its reference kernel (IsSlowImpl): a
/// [3,1,1] mean subtracted from a [3,H,W] image (no per-channel broadcast of
/// a rank-3 tensor's first dim), which ran at 44 ms against 1 ms here.
bool OneDnnBinaryIsSlow(Builder& b, const Node& node);

/// True for an Add, Sub, Mul or Div that this file's kernel runs although
/// oneDNN's binary could: OneDnnBinaryIsSlow, or an output whose dims change
/// from one compiled shape to the next (Builder::VaryingDimsOf). oneDNN's
/// binary is a JIT kernel generated for one shape: a session serving many
/// sequence lengths would generate it again at each one (0.06-0.1 ms per
/// binary on a Zen 4, `ONEDNN_VERBOSE=2`), where this kernel takes its
/// extents as data.
bool BinaryRunsOnOwnKernel(Builder& b, const Node& node);

/// Lowers Add, Sub, Mul, Div, Max or Min node `id` of two float32 inputs
/// (activations or constants, at least one an activation; for Add, Sub, Mul
/// and Div none an activation of the output's dims unless BinaryRunsOnOwnKernel:
/// oneDNN's binary takes those) to one custom step
/// writing a fresh plain float32 activation of the broadcast dims. Returns
/// false, emitting nothing, for any other node.
/// Throws Error(kUnsupported) naming the node when the dims do not broadcast.
bool LowerBroadcastBinary(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
