// Broadcasting binary primitives (backend/lower/ops/binary.cc): Add, Sub, Mul and
// Div as chain anchors; Max, Min, Sum, Mean and Clip with run-time bounds as
// sequences of binary steps.
#pragma once

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Add, Sub, Mul, Div as binary_forward with the chain's post-ops, src0 the
/// run-time input of the output's shape, the other broadcast from plain; when
/// that is the second input of Sub or Div, c - x runs as -(x - c) and c / x as
/// (x / c)^-1 (an eltwise post-op first).
void EmitBinary(Builder& b, const Chain& chain);
/// True for an Add, Sub, Mul or Div of float32 with an activation of the
/// output's dims when the binary primitive EmitBinary would make for the bare
/// node runs oneDNN's reference kernel (IsSlowImpl), decided from the
/// implementation oneDNN returns for the very descriptors EmitBinary makes:
/// src0 in its own layout (channels-last, blocked) or plain, the other input
/// in src0's layout or broadcast in BroadcastLayout's. oneDNN 2.6's binary
/// runs ref:any for, among others, a [3,1,1] mean off a [3,H,W] image, a 5-D
/// [1,2,24,13,7] - [1,2,24,13,1], and a channels-last src0 with a plain
/// operand broadcast along its last axis ([2,24,5,7] * [2,24,5,1]): the
/// reference kernel took 44 ms on the first, our broadcast kernel 1 ms.
/// Such a node runs on LowerBroadcastBinary (broadcast_binary.h) instead.
bool OneDnnBinaryIsSlow(Builder& b, const Node& node);
/// Max, Min, Sum and Mean of one or more inputs, multidirectionally
/// broadcast (ONNX Max-13 ...), as a chain of binary_max / binary_min /
/// binary_add steps on plain buffers; Mean scales the last by 1/N (an
/// eltwise_linear post-op); one input is the output itself, without a step.
/// Refused when no run-time input has the output's shape. Two-input float
/// Max and Min run on LowerBroadcastBinary instead, which keeps NaN; with
/// three or more inputs a NaN in all but the last becomes the next input
/// (oneDNN's binary_max and binary_min), except in a step that oneDNN runs
/// only on its reference kernel (a 5-D broadcast), which runs on
/// BroadcastBinary and keeps NaN.
void EmitVariadic(Builder& b, NodeId node);
/// Clip (opset 11+) whose min or max is computed at run time (a scalar): a
/// binary_max with min, then a binary_min with max, on plain buffers. Clip
/// with constant bounds is an eltwise_clip (EltwiseOf) instead. Either way
/// NaN becomes min (oneDNN's max and min return their second operand where
/// the first is NaN; ONNX Runtime gives NaN).
void EmitClip(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
