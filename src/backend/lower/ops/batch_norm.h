// BatchNormalization (backend/lower/ops/batch_norm.cc): as a chain anchor, and as
// the per-channel affine map chains fold into their weights.
#pragma once

#include <optional>
#include <vector>

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// An inference BatchNormalization as its per-channel affine map
/// (eval::BatchNormAffine); nullopt for training_mode, a parameter not known
/// at build time, or parameters of different lengths.
std::optional<eval::ChannelAffine> BatchNormAffine(Builder& b, const Node& bn);
/// Inference BatchNormalization as batch_normalization_forward with global
/// statistics, over its source in place where FinishChain allows (it takes no
/// post-ops).
/// Error(kUnsupported) for training_mode=1 and for parameters of other than
/// one value per channel.
void EmitBatchNorm(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
