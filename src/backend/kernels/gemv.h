// The product of one row and constant weights, y = W x: a classifier's Gemm at
// batch 1, a squeeze-and-excitation block's 1x1 convolutions on its 1x1 map.
//
// Such a product does one multiply-add per weight it reads, each weight read
// once per inference: it is bound by reading the weights, from memory (a
// classifier's 4.9 MB) or from L3. One row at a time is one sequential stream,
// and one core keeps too few of its cache lines in flight: on a Zen 3 core,
// with a software prefetch 4 KB ahead, 12-13 GB/s from memory when the
// machine's memory is busy (26 when idle). Here four rows, one from each
// quarter of W, go together: four streams, each followed by the hardware
// prefetcher, and x's vectors loaded once for the four. [1280, 960] (4.9 MB)
// from memory in 0.208 ms instead of 0.407 (23.6 GB/s), from L3 in 0.088
// instead of 0.101; mobilenet_v3_large's classifier 0.715 -> 0.416 ms and its
// squeeze-and-excitation blocks 0.450 -> 0.250 ms at 1 thread.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

/// y[o] = epilogue(bias[o] + sum_i w[o * n + i] x[i]) for o < m.
///
/// `w` row-major [m, n] (ONNX Gemm's B with transB = 1, a Conv's [M, C, 1,
/// 1] weights), `x` [n], `bias` [m] (nullptr: none), `y` [m], which must not
/// be `x`. The epilogue's steps apply in order (backend/kernels/pointwise.h); kAdd
/// adds addend[o], `addend` [m] (may be `y`). AVX2 with FMA where the CPU
/// has it (cpu_isa.h), plain C++ elsewhere; the rows of each quarter are
/// split over OpenMP threads when m n >= 65536.
void MatVec(const float* w, const float* bias, const float* x, float* y, std::int64_t m, std::int64_t n,
            const std::vector<PointwiseOp>& epilogue = {}, const float* addend = nullptr);

}  // namespace onnxfuse::backend
