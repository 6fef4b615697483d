// Scales moved into their reader (backend/lower/fused/channel_scale.cc): a
// per-channel x * s into a convolution's weights, a scalar x * k into a
// MatMul's result.
#pragma once

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Squeeze-and-excitation's x * s (s: [1, C, 1, 1] computed at run time, x
/// [1, C, ...]) read only by a group-1 Conv with constant weights no larger
/// than x, or that ConvFitsGemm: recorded in Builder::deferred_scales instead of lowered, its uses
/// not consumed; false, with nothing done, otherwise.
bool DeferChannelScale(Builder& b, NodeId mul);
/// The unscaled x of a deferred x * s (`v` itself when `v` is not deferred).
ValueId ScaledInput(const Builder& b, ValueId v);
/// For the reader of deferred `v` = x * s: consumes the Mul and returns s as
/// a plain [C] argument, for the reader to scale x's channels by.
Arg TakeChannelScale(Builder& b, ValueId v);
/// For the convolution reading deferred `v` = x * s with packed `weights`
/// ([O, C, k...] in any layout): emits the kernel writing the weights times
/// s[c] (per input channel c) into a new arena buffer, consumes the Mul and
/// returns that buffer as the convolution's weights argument. `label`: the
/// convolution's, for the step label.
Arg EmitScaledWeights(Builder& b, ValueId v, const dnnl::memory& weights, const std::string& label);
/// x * k or x / k (k a constant scalar, x computed at run time) read only by a
/// MatMul, once: recorded in Builder::deferred_scalars instead of lowered, its
/// uses not consumed; (k A) B = k (A B), so the MatMul scales its result. False,
/// with nothing done, otherwise.
bool DeferScalarScale(Builder& b, NodeId node);
/// For a MatMul operand `v`: when `v` is a deferred x * k or x / k, consumes
/// that node, multiplies `scale` by k or 1/k and returns x; else returns `v`.
ValueId TakeScalarScale(Builder& b, ValueId v, float& scale);

}  // namespace onnxfuse::backend
