// An inverted residual block (M. Sandler et al., "MobileNetV2: Inverted
// Residuals and Linear Bottlenecks", CVPR 2018) run depth-first, in tiles of
// output rows, so that the expanded tensor never leaves the cache:
//
//   e = act1(x * We + be)            1x1 expand, [in_h, in_w, expanded]
//   d = act2(depthwise_kxk(e) + bd)  stride 1 or 2, [out_h, out_w, expanded]
//   y = act3(d * Wp + bp [+ x])      1x1 project, [out_h, out_w, out_channels]
//
// With the three convolutions as separate primitives, e (6x the block's input)
// is written to memory and read back by the depthwise one, and d again by the
// projection: at MobileNetV2's 112x112 stage, 4.8 MB twice per block, on a core
// with 1 MB of L2. Here each thread walks its band of output rows T at a
// time: it expands only the input rows the depthwise window of those T rows
// needs and has not expanded yet, into a ring of (T - 1) * stride + kernel
// rows (no row is expanded twice, except the kernel - stride rows of halo at
// the start of a band), filters them into T rows of d, and projects those.
// Ring and d-tile stay in L2 (InvertedResidualTileRows); only x is read and y
// written. Cross-layer tiling after M. Alwani et al., "Fused-Layer CNN
// Accelerators", MICRO 2016, and MCUNetV2's patch-based inference (J. Lin et
// al., NeurIPS 2021).
//
// Squeeze-and-excitation between the depthwise and the project conv
// (MobileNetV3, EfficientNet; J. Hu et al., CVPR 2018) needs the mean of all
// of d before the first row is projected. Such a block runs in two phases:
// here, without the projection (out_channels 0), d is written in tiles and
// its channel means taken as each row is made; the excitation and the
// projection with its weights scaled by the gate then run as steps of their
// own (backend/lower/fused/channel_scale.h). Recomputing d's tiles in the
// second phase instead of keeping d would cost the expand convolution twice,
// most of the block's arithmetic, to save one write and read of d.
//
// Layouts: one image, channels-last. x [in_h, in_w, in_channels], y [out_h,
// out_w, out_channels], row-major. Weights packed once by
// PackInvertedResidual, into one buffer of InvertedResidualPackedFloats
// floats. Sums run in float32 in a fixed order for every output, whatever the
// thread count or tile height: results are bit-identical across both.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

/// The block's geometry. The expand and project convolutions are 1x1,
/// stride 1, unpadded; the depthwise one is kernel x kernel, undilated, one
/// filter per expanded channel, stride `stride` in both axes, padded by
/// pad_top and pad_left before the first row and column (the rest of its
/// padding follows from out_h and out_w). out_channels 0: no projection, y is
/// d itself, [out_h, out_w, expanded].
struct InvertedResidualShape {
  std::int64_t in_h = 0, in_w = 0, in_channels = 0;
  std::int64_t expanded = 0;
  std::int64_t kernel = 3, stride = 1, pad_top = 1, pad_left = 1;
  std::int64_t out_h = 0, out_w = 0, out_channels = 0;
};

/// The three convolutions' activations, each applied in order to each output
/// (PointwiseOp, backend/kernels/pointwise.h). `project` may hold one kAdd:
/// the residual, x itself (then in_channels == out_channels and the map keeps
/// its size); kAdd is refused in `expand` and `depthwise`.
struct InvertedResidualEpilogues {
  std::vector<PointwiseOp> expand, depthwise, project;
};

/// Floats of the packed weights: expand panels, its bias, depthwise taps, its
/// bias, project panels, its bias (channel counts rounded up to 16, the rest
/// zero).
std::int64_t InvertedResidualPackedFloats(const InvertedResidualShape& shape);

/// Packs the weights, BatchNormalization folded in already: `expand` [expanded,
/// in_channels] (ONNX Conv's [M, C, 1, 1]), `depthwise` [expanded, kernel,
/// kernel] ([M, 1, k, k]), `project` [out_channels, expanded]; the biases one
/// value per output channel. `packed` holds InvertedResidualPackedFloats.
void PackInvertedResidual(const InvertedResidualShape& shape, const float* expand, const float* expand_bias,
                          const float* depthwise, const float* depthwise_bias, const float* project,
                          const float* project_bias, float* packed);

/// The tile height: the most output rows whose ring of expanded rows and
/// depthwise tile fit in half of `cache_bytes` (the L2 of one core, so that x's
/// rows and the weights fit beside them), at least 1, at most out_h.
std::int64_t InvertedResidualTileRows(const InvertedResidualShape& shape, std::int64_t cache_bytes);

/// Bytes of scratch one thread needs at tile height `tile_rows`.
std::int64_t InvertedResidualScratchBytes(const InvertedResidualShape& shape, std::int64_t tile_rows);

/// y = the block of x. Output rows are split over at most `scratch_bytes /
/// InvertedResidualScratchBytes` OpenMP threads, each with its own slice of
/// `scratch` (64-byte aligned). `means` (nullptr: none) [expanded] receives
/// the mean of each channel of d over its out_h x out_w pixels
/// (GlobalAveragePool), summed per row and then over the rows in order: the
/// same whatever the threads and tile height. Throws std::logic_error when
/// the scratch does not hold one thread's, an epilogue has a kAdd it may
/// not, or `means` is asked of a block with a projection.
void InvertedResidual(const float* x, const float* packed, float* y, const InvertedResidualShape& shape,
                      const InvertedResidualEpilogues& epilogues, std::int64_t tile_rows, float* scratch,
                      std::int64_t scratch_bytes, float* means = nullptr);

/// The unified L2 cache of one core in bytes (sysconf's _SC_LEVEL2_CACHE_SIZE;
/// 1 MB when the system does not say).
std::int64_t L2CacheBytes();

}  // namespace onnxfuse::backend
