// The Gelu (erf) decomposition as one kernel of ours (backend/lower/gelu.cc).
#pragma once

#include <optional>

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// The output of the Gelu (erf) decomposition applied to `x`, if `x` feeds one;
/// with `absorb`, its nodes are consumed and marked absorbed.
std::optional<ValueId> MatchGelu(Builder& b, ValueId x, bool absorb);
/// Lowers the Gelu decomposition whose Div is `div` as one pass of our Gelu
/// kernel (backend/kernels/activation.h) in the layout of its input.
void EmitGelu(Builder& b, NodeId div);
/// That kernel for the decomposition whose Div is `div` (its nodes already
/// absorbed by the caller), writing the decomposition's output `out`: one step
/// labelled "<div>+Gelu".
void EmitGeluKernel(Builder& b, const Node& div, ValueId out);

}  // namespace onnxfuse::backend
