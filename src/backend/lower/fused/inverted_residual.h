// An inverted residual block (patterns/inverted_residual.onnxtxt) as one step
// of our depth-first kernel (backend/kernels/inverted_residual.h), where it
// wins (backend/lower/fused/inverted_residual.cc).
#pragma once

#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers the computing members `m` of an inverted residual block, in the
/// pattern's order: Conv, BatchNormalization, activation (Relu, Clip,
/// HardSwish, HardSigmoid and Mul, or Sigmoid and Mul: swish), Conv
/// (depthwise), BatchNormalization, the same activation, Conv,
/// BatchNormalization, and optionally the residual Add of the block's input;
/// or of its first two convolutions alone (patterns/pw_dw_conv.onnxtxt: a
/// block with squeeze-and-excitation), whose output's GlobalAveragePool, when
/// one reads it, the same step computes and absorbs. One step of InvertedResidual when
/// UseInvertedResidual says so and the kernel takes the block: fused mode, a
/// CPU with AVX2 or AVX-512, batch 1, float weights and biases known at build
/// time, 1x1 expand and project convs (stride 1, unpadded), a square
/// undilated depthwise kernel with one stride, each activation one the kernel
/// has, a residual of the block's input itself. The input is read
/// channels-last (reordered there if it is not) and the output is written
/// channels-last. Returns false, emitting nothing, otherwise: the group's
/// chain lowering then runs the convolutions.
bool LowerInvertedResidual(Builder& b, const std::vector<const Node*>& m);

/// The cost model: whether the depth-first kernel beats the three
/// convolutions for a block whose input is `in_h` x `in_w` and whose expanded
/// tensor has `expanded` channels, on a core with `l2_bytes` of L2. Separate
/// convolutions write the expanded tensor (and the depthwise output) and read
/// them back; that costs little while they fit in L2 and is what the kernel
/// saves once they do not. Measured on Zen 4 (1 MB of L2) with
/// scripts/bench.sh: see docs/benchmarks.md.
bool UseInvertedResidual(std::int64_t in_h, std::int64_t in_w, std::int64_t expanded, std::int64_t l2_bytes);

}  // namespace onnxfuse::backend
