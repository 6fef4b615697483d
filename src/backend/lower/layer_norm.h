// The LayerNormalization decomposition (ReduceMean, Sub, Pow, ReduceMean, Add,
// Sqrt, Div, optional Mul and Add) as one primitive, and that primitive, which
// the LayerNormalization op uses too (backend/lower/layer_norm.cc).
#pragma once

#include <string>

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// Lowers the LayerNormalization decomposition starting at ReduceMean `node`
/// (fused mode) and absorbs its nodes; false when the pattern does not match.
bool TryLayerNorm(Builder& b, NodeId node);
/// One layer_normalization_forward over the last axis of `src` (a plain view
/// [.., C] of `dims`' elements): y = (x - mean) / sqrt(var + epsilon) * scale + shift,
/// `scale` and `shift` [C]. With `mean` / `variance` not null, the primitive runs
/// as forward_training and also writes the statistics ([rows]) there.
/// Returns the destination (plain, logical dims `dims`).
Act EmitLayerNormPrimitive(Builder& b, const Node& node, const std::string& label, const Arg& src, const Dims& dims,
                           float epsilon, const Arg& scale, const Arg& shift, Act* mean = nullptr,
                           Act* variance = nullptr);

}  // namespace onnxfuse::backend
