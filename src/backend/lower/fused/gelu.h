// The Gelu (erf) decomposition as one kernel of ours (backend/lower/fused/gelu.cc).
#pragma once

#include <optional>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The output of the Gelu (erf) decomposition whose Div is `div`, if `div`
/// starts one: y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), with x read
/// by that Div and Mul only and every inner value by its one successor. With
/// `absorb`, its nodes are consumed and marked absorbed. Starting from the Div
/// (not from x) matters: x's other reader may be a Div lowered in an earlier
/// group, whose constant is released by then.
std::optional<ValueId> MatchGelu(Builder& b, const Node& div, bool absorb);
/// Lowers the Gelu decomposition whose Div is `div` as one pass of our Gelu
/// kernel (backend/kernels/activation.h) in the layout of its input.
void EmitGelu(Builder& b, NodeId div);
/// That kernel for the decomposition whose Div is `div` (its nodes already
/// absorbed by the caller), writing the decomposition's output `out`: one step
/// labelled "<div>+Gelu".
void EmitGeluKernel(Builder& b, const Node& div, ValueId out);

}  // namespace onnxfuse::backend
