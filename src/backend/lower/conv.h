// Conv chains: convolution_forward with the chain's folded BatchNormalization
// and post-ops (backend/lower/conv.cc).
#pragma once

#include "backend/lower/chain.h"

namespace onnxfuse::backend {

/// Conv as convolution_forward with the chain's folded BatchNormalization and
/// post-ops; tries our own kernels first (backend/lower/own_kernels.h) and a
/// deferred concat's parts (EmitConvOverConcatParts).
void EmitConv(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
