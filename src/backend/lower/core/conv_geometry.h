// A Conv's output dims and oneDNN geometry, shared by every lowering that
// runs a Conv (oneDNN's convolution, our pointwise, GEMM and Winograd
// kernels, squeeze-and-excitation, the convolution over a deferred concat)
// and by the checks that defer a scale into one.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// A Conv's output dims and oneDNN geometry (strides, dilations minus 1,
/// left / right padding with auto_pad resolved) for input dims `x` and weight
/// dims `w` [O, I/group, k...] (ONNX Operators.md, Conv). Throws
/// Error(kUnsupported) for other than 1-D to 3-D, Error(kInvalidModel) when
/// the channels do not match.
struct ConvGeometry {
  Dims out, strides, dil, pl, pr;
};
ConvGeometry ConvGeometryOf(const Builder& b, const Node& node, const Dims& x, const Dims& w);

}  // namespace onnxfuse::backend
