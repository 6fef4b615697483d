// ConvTranspose chains (backend/lower/ops/deconv.cc).
#pragma once

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// ConvTranspose as deconvolution_forward, with folded BatchNormalization and post-ops.
void EmitDeconv(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
