// The LayerNormalization decomposition (ReduceMean, Sub, Pow, ReduceMean, Add,
// Sqrt, Div, optional Mul and Add) as one step of our LayerNorm kernel
// (backend/kernels/layer_norm.h), which the LayerNormalization op uses too.
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
/// One LayerNorm step "<first ReduceMean>+LayerNormalization" for `parts`;
/// absorbs its nodes and sets `parts.out`.
void EmitLayerNorm(Builder& b, const LayerNormParts& parts);
/// One LayerNorm kernel step (backend/kernels/layer_norm.h) over rows of `n`
/// elements of `src` (a dense plain view of `dims`' elements): y = (x - mean) /
/// sqrt(var + epsilon) * scale + shift, `scale` and `shift` [n] float32. With
/// `mean` / `inv_std_dev` not null, it also writes those statistics ([rows],
/// plain) there. Returns the destination (plain, dims `dims`).
Act EmitLayerNormKernel(Builder& b, const std::string& label, const Arg& src, const Dims& dims, std::int64_t n,
                        float epsilon, const Arg& scale, const Arg& shift, Act* mean = nullptr,
                        Act* inv_std_dev = nullptr);

}  // namespace onnxfuse::backend
