// Lowering chains onto our own kernels instead of oneDNN primitives, where
// those are faster: the AVX-512 pointwise GEMM (backend/kernels/pointwise.h),
// the AVX2 GEMM and matrix-vector product (backend/kernels/gemm.h,
// backend/kernels/gemv.h) and the AVX2 Winograd convolution
// (backend/kernels/winograd.h). Each Emit* returns false, emitting nothing,
// when the CPU, the shapes or the chain's post-ops do not fit; the caller then
// lowers the chain to oneDNN (backend/lower/ops/conv.cc, backend/lower/ops/matmul.cc).
// Squeeze-and-excitation's excitation and gate: squeeze_excite.h,
// channel_scale.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/lower/core/chain.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/operands.h"
#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

/// A 1x1, stride-1, group-1 Conv on at most 256 channels-last pixels, its
/// post-ops all Relu, Clip, linear, HardSwish or a residual Add, as
/// PointwiseConv (backend/kernels/pointwise.h): `w` [out, in, 1, 1] (read only when
/// packed) and `bias` with
/// the chain's BatchNormalization folded in. Returns false, emitting
/// nothing, for any other Conv (backend/lower/own_kernels/pointwise.cc).
bool EmitPointwise(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                   const ConvGeometry& geometry);
/// The chain's post-ops as the epilogue of our own kernels (PointwiseOp,
/// backend/kernels/pointwise.h), `*sum` set to the residual Add's when there is one;
/// nullopt when one is not among Relu, Clip, a linear map, HardSwish, swish and a
/// residual Add (backend/lower/own_kernels/pointwise.cc).
std::optional<std::vector<PointwiseOp>> EpilogueOf(const Chain& chain, const PostOp** sum);
/// The destination of one of our kernels that adds the residual of `sum`
/// (nullptr: none) itself: `addend` set to the residual in `dst_md`, and the
/// result in place over it when nothing reads it later and it is not `src`,
/// else (and without a residual) a new buffer (backend/lower/own_kernels/pointwise.cc).
Act ResidualDestination(Builder& b, const Node& node, const PostOp* sum, const Arg& src, const Dims& out,
                        const dnnl::memory::desc& dst_md, std::optional<Arg>& addend);
/// EpilogueOf for kernels that add the residual first (Gemm, our Winograd
/// convolution): nullopt also when the residual Add is not the first post-op
/// (backend/lower/own_kernels/own_gemm.cc).
std::optional<std::vector<PointwiseOp>> GemmEpilogueOf(const Chain& chain, const PostOp** sum);
/// A product of a run-time operand `input` (read as [rows, depth] row-major)
/// and constant weights (`weights()` gives their data, `weights_md` a view of
/// dims [depth, cols]; called only when they are packed here, not when a
/// session's earlier schedule packed them already) into `out` (cols its last dim, rows the product of the others), its
/// bias (empty: none, or a first post-op adding one constant per column) and
/// post-ops as the epilogue, as Gemm (backend/kernels/gemm.h) on AVX2 CPUs. A folded
/// BatchNormalization (chain.affine) must be in `weights` and `bias` already
/// (eval::ScaleWeights, eval::FoldIntoBias); it is not read here. A single row (a
/// classifier at batch 1) runs as MatVec (backend/kernels/gemv.h) instead, on AVX-512
/// CPUs too (it reads the weights at twice the rate of oneDNN's brgemm matmul). Returns
/// false, emitting nothing, when the CPU, the shapes (one row, or cols a
/// multiple of 16 and at least 16 rows) or the post-ops do not fit
/// (backend/lower/own_kernels/own_gemm.cc).
bool EmitOwnGemm(Builder& b, const Chain& chain, ValueId input, const Dims& out, std::int64_t depth,
                 const dnnl::memory::desc& weights_md, const std::function<const float*()>& weights,
                 std::vector<double> bias);
/// A group-1, undilated Conv of one channel-blocked (nChw8c) image into at
/// most 64 output pixels (196 for a spatial kernel with an im2col row of at
/// least 512: ConvFitsGemm), output channels a multiple of 16 and at least 64, as our own GEMM
/// over the input's im2col rows (backend/kernels/gemm.h, GemmConvRows) on AVX2 CPUs,
/// its result nChw8c; `w` [O, C, kh, kw] and `bias` with the chain's
/// BatchNormalization folded in, post-ops as EmitOwnGemm's. Returns false,
/// emitting nothing, otherwise (backend/lower/own_kernels/own_gemm.cc).
bool EmitConvGemm(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                  const ConvGeometry& geometry);
/// A 3x3, stride-1, pad-1, group-1, undilated Conv of one channel-blocked
/// (nChw8c) image with at least 64 input channels (a multiple of 8) and 64
/// output channels (a multiple of 16), as Winograd's F(2x2, 3x3) over our own
/// GEMM (backend/kernels/winograd.h) on AVX2 CPUs, its result nChw8c; `w` and `bias`
/// with the chain's BatchNormalization folded in, post-ops as EmitOwnGemm's.
/// Returns false, emitting nothing, otherwise (backend/lower/own_kernels/winograd.cc).
bool EmitConvWinograd(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                      const ConvGeometry& geometry);
/// Whether Conv `conv` of `x` (weights dims `w`, `geometry` its ConvGeometryOf)
/// has the shape and layout EmitConvGemm takes; its post-ops are not checked.
/// When `x` is that of a deferred x * s, EmitConvGemm scales its channels as it
/// packs the rows (GemmConvRows::channel_scale).
bool ConvFitsGemm(const Builder& b, const Node& conv, const Act& x, const Dims& w, const ConvGeometry& geometry);
/// After lowering: each PointwiseConv step prefetches the first weight panel
/// of the next one when it comes soon after (backend/lower/own_kernels/pointwise.cc).
void LinkPointwise(Builder& b);

}  // namespace onnxfuse::backend
