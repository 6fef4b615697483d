// Squeeze-and-excitation's excitation as one kernel of ours
// (backend/lower/squeeze_excite.cc).
#pragma once

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// Squeeze-and-excitation's excitation starting at Conv `fc1`: 1x1 Conv of a
/// [1, C, 1, 1] activation, Relu or swish, 1x1 Conv back to C channels,
/// Sigmoid or HardSigmoid, as one step of our own (both matrix-vector products
/// and activations); absorbs the nodes. False, with nothing done, when the
/// nodes do not form it.
bool TrySqueezeExcite(Builder& b, NodeId fc1);

}  // namespace onnxfuse::backend
