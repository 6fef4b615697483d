// BatchNormalization at inference as a per-channel affine map, and that map
// folded into the weights and bias of the op that feeds it: the one place the
// fold is computed, for the graph rewrite (rewrite/fold_batchnorm.h: new Conv
// and ConvTranspose initializers) and for the backend's lowerings (a chain's
// BatchNormalization folded into Conv, ConvTranspose, Gemm or MatMul weights).
//
// ONNX Operators.md, BatchNormalization (inference, per channel c):
//   y = scale_c · (x − mean_c) / √(var_c + epsilon) + B_c
// which is y = a_c · x + b_c with
//   a_c = scale_c / √(var_c + epsilon),   b_c = B_c − mean_c · a_c.
// Folded after an op computing x = W ⊛ input + bias per output channel c:
//   W'[output channel c] = W[output channel c] · a_c,   bias'_c = bias_c · a_c + b_c.
// Computed in double; weights are rounded once to their element type.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxfuse::eval {

/// y = scale[c] * x + shift[c] per channel c.
struct ChannelAffine {
  std::vector<double> scale, shift;
};

/// The affine map of an inference BatchNormalization from its per-channel
/// parameters (all of one length) and epsilon.
ChannelAffine BatchNormAffine(const std::vector<double>& scale, const std::vector<double>& bias,
                              const std::vector<double>& mean, const std::vector<double>& var, double epsilon);

/// `first` then `then`: the map x -> then(first(x)), channel by channel.
ChannelAffine ComposeAffine(const ChannelAffine& first, const ChannelAffine& then);

/// Where a weight tensor keeps its output channels.
enum class WeightLayout {
  kOutputMajor,    ///< [C_out, ...]: Conv's (C_out, C_in/group, k...), a matmul's [N, K]
  kConvTranspose,  ///< ConvTranspose's (C_in, C_out/group, k...), grouped by `group`
};

/// `weights` (row-major, `dims`) with each output channel c multiplied by
/// scale[c]. For kConvTranspose with G = group, W[i, j, ...] feeds output
/// channel (i / (C_in/G)) · (C_out/G) + j.
void ScaleWeights(std::vector<float>& weights, const std::vector<std::int64_t>& dims, WeightLayout layout,
                  std::int64_t group, const std::vector<double>& scale);
void ScaleWeights(std::vector<double>& weights, const std::vector<std::int64_t>& dims, WeightLayout layout,
                  std::int64_t group, const std::vector<double>& scale);

/// bias[c] = bias[c] · scale[c] + shift[c], for the channels the map has.
void FoldIntoBias(std::vector<double>& bias, const ChannelAffine& affine);

}  // namespace onnxfuse::eval
