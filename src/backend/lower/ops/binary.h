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
/// Max, Min, Sum and Mean of one or more inputs, multidirectionally
/// broadcast (ONNX Max-13 ...), as a chain of binary_max / binary_min /
/// binary_add steps on plain buffers; Mean scales the last by 1/N (an
/// eltwise_linear post-op); one input is the output itself, without a step.
/// Refused when no run-time input has the output's shape. Two-input float
/// Max and Min run on LowerBroadcastBinary instead, which keeps NaN; with
/// three or more inputs a NaN in all but the last becomes the next input.
void EmitVariadic(Builder& b, NodeId node);
/// Clip (opset 11+) whose min or max is computed at run time (a scalar): a
/// binary_max with min, then a binary_min with max, on plain buffers. Clip
/// with constant bounds is an eltwise_clip (EltwiseOf) instead. Either way
/// NaN becomes min (oneDNN's max and min return their second operand where
/// the first is NaN; ONNX Runtime gives NaN).
void EmitClip(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
