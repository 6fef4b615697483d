// The LayerNormalization decomposition (ReduceMean, Sub, Pow, ReduceMean, Add,
// Sqrt, Div, optional Mul and Add) as one primitive, and that primitive, which
// the LayerNormalization op uses too (backend/lower/fused/layer_norm.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// A LayerNormalization decomposition as EmitLayerNorm lowers it: its input
/// `x` (last axis of `channels`), the value it computes so far `out` (the
/// Div's, then the affine Mul's and Add's when taken), epsilon, the per-channel
/// scale (ones) and shift (zeros) [channels], and its nodes, the first
/// ReduceMean first.
struct LayerNormParts {
  LayerNormParts(ValueId input, ValueId div_out, double eps, std::int64_t channels)
      : x(input), out(div_out), epsilon(eps), scale(static_cast<std::size_t>(channels), 1.f),
        shift(static_cast<std::size_t>(channels), 0.f) {}
  ValueId x, out;
  double epsilon;
  std::vector<float> scale, shift;
  std::vector<const Node*> nodes;
};
/// True for a ReduceMean over the last axis of a rank-`rank` input, kept (keepdims 1).
bool LastAxisMean(const Node& n, std::size_t rank);
/// Takes `n`, the affine Mul (scale) or Add (shift) reading `parts.out`, into
/// `parts` when its other input is a float constant of one value per channel
/// ([C]); false, with `parts` unchanged, otherwise.
bool TakeLayerNormAffine(Builder& b, const Node& n, LayerNormParts& parts);
/// One layer_normalization_forward step "<first ReduceMean>+LayerNormalization"
/// for `parts`; absorbs its nodes and sets `parts.out`.
void EmitLayerNorm(Builder& b, const LayerNormParts& parts);
/// One layer_normalization_forward over the last axis of `src` (a plain view
/// [.., C] of `dims`' elements): y = (x - mean) / sqrt(var + epsilon) * scale + shift,
/// `scale` and `shift` [C]. With `mean` / `variance` not null, the primitive runs
/// as forward_training and also writes the statistics ([rows]) there.
/// Returns the destination (plain, logical dims `dims`).
Act EmitLayerNormPrimitive(Builder& b, const Node& node, const std::string& label, const Arg& src, const Dims& dims,
                           float epsilon, const Arg& scale, const Arg& shift, Act* mean = nullptr,
                           Act* variance = nullptr);

}  // namespace onnxfuse::backend
