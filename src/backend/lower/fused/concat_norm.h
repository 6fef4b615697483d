// Concat -> BatchNormalization (-> Relu) in one pass (backend/lower/fused/concat_norm.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Concat (`node`, along channels) whose only reader is an inference
/// BatchNormalization with constant parameters, optionally followed by its
/// only reader Relu, on channels-last or channel-blocked sources: one custom
/// kernel writing the normalized result, channel-blocked when the parts are
/// and start at block boundaries, else channels-last. False (nothing
/// emitted) when the pattern or the layouts do not match.
bool TryConcatNorm(Builder& b, const Node& node);

}  // namespace onnxfuse::backend
