// Conv chains: convolution_forward with the chain's folded BatchNormalization
// and post-ops (backend/lower/ops/conv.cc).
#pragma once

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Conv as convolution_forward with the chain's folded BatchNormalization and
/// post-ops; tries our own kernels first (backend/lower/own_kernels/own_kernels.h) and a
/// deferred concat's parts (EmitConvOverConcatParts).
void EmitConv(Builder& b, const Chain& chain);
/// The chain whole, post-ops included, on one of our own kernels (a 1x1 conv
/// on a small map, Winograd, the AVX2 GEMM) when one takes it; false, with
/// nothing emitted, otherwise, and for weights or a bias computed at run time
/// or an input that is a deferred concat.
bool EmitConvOnOwnKernel(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
