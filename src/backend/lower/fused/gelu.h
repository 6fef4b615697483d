// The Gelu (erf) decomposition as one kernel of ours (backend/lower/fused/gelu.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// One pass of our Gelu kernel (backend/kernels/activation.h), in the layout
/// of its input, for the Gelu (erf) decomposition
/// y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) whose Div is `div` (the
/// pattern library found it; its nodes already absorbed by the caller),
/// writing the decomposition's output `out`: one step labelled "<div>+Gelu".
void EmitGeluKernel(Builder& b, const Node& div, ValueId out);

}  // namespace onnxfuse::backend
