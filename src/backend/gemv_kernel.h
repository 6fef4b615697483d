// The product of one row and constant weights, y = W x: a classifier's Gemm at
// batch 1, a squeeze-and-excitation block's 1x1 convolutions on its 1x1 map.
//
// Such a product does one multiply-add per weight it reads, each weight read
// once per inference: it is bound by reading the weights, from memory (a
// classifier's 4.9 MB) or from L3. On one Zen 3 core oneDNN 2.6's gemm:jit
// and a one-accumulator loop (an `omp simd` reduction) read them at 19-21
// GB/s: each row's multiply-adds are one chain waiting on the FMA's latency.
// Here four accumulators break the chain, and a software prefetch 4 KB ahead
// (T. Mowry, M. Lam, A. Gupta, ASPLOS 1992) keeps more cache lines in flight
// than the hardware prefetcher does: [1280, 960] (4.9 MB) in 0.183 ms from
// memory, 0.122 ms from L3, against 0.239 and 0.218 ms with one accumulator.
#pragma once

#include <cstdint>
#include <vector>

#include "pointwise_kernel.h"

namespace onnxfuse::backend {

/// y[o] = epilogue(bias[o] + sum_i w[o * n + i] x[i]) for o < m.
///
/// `w` row-major [m, n] (ONNX Gemm's B with transB = 1, a Conv's [M, C, 1,
/// 1] weights), `x` [n], `bias` [m] (nullptr: none), `y` [m], which must not
/// be `x`. The epilogue's steps apply in order (pointwise_kernel.h); kAdd
/// adds addend[o], `addend` [m] (may be `y`). AVX2 with FMA where the CPU
/// has it (cpu_isa.h), plain C++ elsewhere; rows are split over OpenMP
/// threads when m n >= 65536.
void MatVec(const float* w, const float* bias, const float* x, float* y, std::int64_t m, std::int64_t n,
            const std::vector<PointwiseOp>& epilogue = {}, const float* addend = nullptr);

}  // namespace onnxfuse::backend
