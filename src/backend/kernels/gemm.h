// The product of a run-time matrix and constant weights (MatMul, Gemm) as an
// AVX2 GEMM of our own, for CPUs where oneDNN 2.6 has no brgemm matmul.
//
// On AVX2 oneDNN runs such a product on its sgemm (gemm:jit): ViT-B/16's
// [197, 768] x [768, 3072] at 80-83 GFLOPS on one Zen 3 core, whose fp32 peak
// is 102. This GEMM follows the BLIS loop order (F. Van Zee, R. van de Geijn,
// "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", ACM TOMS
// 2015): the weights are packed once, at build time, in panels of 16
// columns; per block of depth (kc) and rows (mc) the rows are packed, in
// ceil(mc / 6) groups of 5 or 6 rows (near-equal: no group of one row), as
// [groups][kc][6] into a buffer that stays in L2; a 6 x 16 micro-kernel
// keeps 12 accumulators in registers, reading the panel's kc x 16 slice from
// L1 for every group. Stand-alone on that core: 88-92 GFLOPS for ViT's MLP
// products, 95 for [197, 768] x [768, 768].
//
//   c[m, n] = epilogue(bias[n] + sum_k a[m, k] * w[k, n])
//
// a [rows, depth] and c [rows, cols] row-major; w packed (kGemmPanel).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

/// Columns per packed weight panel: two AVX2 vectors.
constexpr std::int64_t kGemmPanel = 16;

/// Whether Gemm is the kernel of choice for a product of fixed shape on this
/// CPU: AVX2 with FMA but not AVX-512 (where oneDNN's brgemm matmul is at
/// peak already), cpu_isa.h. It runs on any CPU with AVX2 and FMA.
bool HaveGemm();

/// The product's shapes. cols is a multiple of kGemmPanel.
struct GemmShape {
  std::int64_t rows = 0, depth = 0, cols = 0;
};

/// A convolution's input read as the product's rows, never materialized
/// (im2col: K. Chellapilla, S. Puri, P. Simard, "High Performance
/// Convolutional Neural Networks for Document Processing", 2006): row m is
/// output pixel (oh, ow) = (m / out_w, m % out_w), column k is tap
/// (kh, kw) = (k / channels / kernel_w, k / channels % kernel_w) of channel
/// c = k % channels: x[c, oh * stride_h - pad_top + kh, ow * stride_w -
/// pad_left + kw], 0 outside the image. x is one image, channel-blocked
/// nChw8c: [ceil(channels / 8)][in_h][in_w][8]; depth = kernel_h * kernel_w *
/// channels.
struct GemmConvRows {
  std::int64_t channels = 0, in_h = 0, in_w = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  /// [channels]: x's channel c is read times channel_scale[c] (the gate of a
  /// squeeze-and-excitation block, conv(x * s, W); backend/lower/fused/channel_scale.cc), as
  /// the rows are packed; nullptr: x as it is.
  const float* channel_scale = nullptr;
};

/// How the operands are laid out.
struct GemmLayout {
  const GemmConvRows* conv = nullptr;  ///< a is this convolution's input; nullptr: a row-major [rows, depth]
  bool blocked_c = false;  ///< c and addend nChw8c of one image, [cols / 8][rows][8]; false: row-major [rows, cols]
};

/// c = epilogue(bias + a * w). `w`: [depth, cols] blocked by kGemmPanel
/// columns, each block [depth][16] (oneDNN's blocked layout with inner block
/// 16 on dim 1). `bias` [cols] (nullptr: none). The epilogue is
/// PointwiseConv's (backend/kernels/pointwise.h) with kAdd, if any, first (a
/// kAdd later is ignored): it reads `addend` [rows, cols], which may be `c`
/// itself. Column panels are split over OpenMP threads.
/// Requires AVX2 and FMA (CpuIsa() not kScalar).
void Gemm(const float* a, const float* w, const float* bias, const float* addend, float* c, const GemmShape& shape,
          const std::vector<PointwiseOp>& epilogue, const GemmLayout& layout = {});

}  // namespace onnxfuse::backend
