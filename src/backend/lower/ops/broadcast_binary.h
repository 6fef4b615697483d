// Add, Sub, Mul and Div on float32 whose operands both broadcast
// (backend/kernels/broadcast_binary.h): no input has the output's dims, so
// oneDNN's binary primitive (binary.h, whose src0 must) cannot run the node.
// Max and Min of two float32 inputs always run here, NaN kept.
// RAFT's per-sample coordinate offsets ([256,1,1,2] + [1,7,7,2]) are 44 such
// Adds; as host steps (host_step.h, element by element in double) they took
// 240 ms of its 580.
#pragma once

#include "backend/kernels/broadcast_binary.h"
#include "backend/lower/core/builder.h"
#include "backend/lower/ops/binary.h"  // OneDnnBinaryIsSlow

namespace onnxfuse::backend {


/// True for an Add, Sub, Mul or Div that this file's kernel runs although
/// oneDNN's binary could: OneDnnBinaryIsSlow (binary.h), or an output whose dims change
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

/// One step of BroadcastBinary (kind `kind`, labelled with the node) computing
/// node.outputs[0] = alg(inputs[0], inputs[1]) as a fresh plain float32
/// activation of dims `out`; the inputs (float32 activations or constants,
/// any layout) are read plain.
void EmitOwnBinary(Builder& b, const Node& node, BinaryAlg alg, const std::string& kind, const Dims& out);

}  // namespace onnxfuse::backend
