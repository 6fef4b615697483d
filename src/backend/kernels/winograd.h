// 3x3 convolutions (stride 1, pad 1) by Winograd's minimal filtering
// F(2x2, 3x3) on AVX2, over our own GEMM (backend/kernels/gemm.h).
//
// F(2x2, 3x3) (A. Lavin, S. Gray, "Fast Algorithms for Convolutional Neural
// Networks", CVPR 2016) computes each 2x2 block of outputs from a 4x4 tile of
// the input as Y = A^T [(G g G^T) . (B^T d B)] A: per tile and channel 16
// multiplications instead of 36. Over C input and K output channels the 16
// element-wise products become 16 independent GEMMs [tiles, C] x [C, K], the
// bulk of the work, 2.25 times fewer multiply-adds than the direct
// convolution's. oneDNN 2.6 has this algorithm for AVX-512 only.
//
// Layouts: x and y one image, channel-blocked nChw8c ([C / 8][H][W][8]); the
// transformed weights U [16][C][K] in Gemm's panels (PackWinogradWeights).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

/// The convolution's shapes: C and K multiples of 8 and 16.
struct WinogradShape {
  std::int64_t channels = 0, out_channels = 0, height = 0, width = 0;
  /// Tiles of 2x2 outputs: ceil(H / 2) ceil(W / 2).
  std::int64_t Tiles() const { return (height + 1) / 2 * ((width + 1) / 2); }
};

/// U = G g G^T of weights `w` [K, C, 3, 3] (oihw) as 16 matrices [C, K],
/// each in Gemm's layout (kGemmPanel-column panels, [C][16] each): the 16 x C
/// x K floats the convolution reads.
std::vector<float> PackWinogradWeights(const float* w, std::int64_t out_channels, std::int64_t channels);

/// Bytes of scratch WinogradConv3x3 needs for `threads` OpenMP threads: per
/// block of tiles in flight 16 x block x C transformed inputs and 16 x block x
/// K products (floats); one block per thread when there are at least as many
/// blocks as threads, else one (resnet18's 28x28x128 layers, in one block:
/// 3.2 MB).
std::int64_t WinogradScratchBytes(const WinogradShape& shape, int threads);

/// y = epilogue(bias + conv3x3(x, w)), pads 1, stride 1. `u` from
/// PackWinogradWeights, `bias` [K]; the epilogue as Gemm's (kAdd first, reading
/// `addend` nChw8c like y, which may be y itself). Tiles go in blocks (all of
/// them, or as many as keep a block in L2; backend/kernels/winograd.cc, TileBlock), over
/// OpenMP threads, each block in its part of `scratch` (`scratch_bytes`, at
/// least WinogradScratchBytes(shape, 1); more threads than it has room for
/// run fewer blocks at once). Requires HaveGemm().
void WinogradConv3x3(const float* x, const float* u, const float* bias, const float* addend, float* y,
                     const WinogradShape& shape, const std::vector<PointwiseOp>& epilogue, float* scratch,
                     std::int64_t scratch_bytes);

}  // namespace onnxfuse::backend
