// One reduction over the middle axis of a dense row-major float32 tensor
// [outer, r, inner] (ONNX Operators.md, ReduceSum-13, ReduceMax-13, ...):
//   y[o, i] = post(fold over k of pre(x[o, k, i]))
// where fold is a sum, product, maximum or minimum, in float32, k in order.
//
// Why our own: oneDNN 2.6's reduction has a jit kernel only for reductions
// over the innermost axes; over any other axis (a [2, 75] reduced over its
// first axis, a [1, 8, 6, 5] over its second) it runs its reference kernel.
// Here the reduced axis is the outer loop and each step folds one contiguous
// row of `inner` values, which the compiler vectorises. A reduction over
// several axes that are not adjacent runs as one pass per run of adjacent
// reduced axes (backend/lower/ops/reduce.cc).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

enum class ReduceFold { kSum, kProd, kMax, kMin };
/// Applied to each element before the fold (kAbs: ReduceL1; kSquare: ReduceL2
/// and ReduceSumSquare; kExp: ReduceLogSumExp) or to each result after it
/// (kScale: a mean's 1/count; kSqrt: ReduceL2; kLog: ReduceLogSum and
/// ReduceLogSumExp).
enum class ReduceMap { kNone, kAbs, kSquare, kExp, kScale, kSqrt, kLog };

struct ReduceStep {
  ReduceFold fold = ReduceFold::kSum;
  ReduceMap pre = ReduceMap::kNone, post = ReduceMap::kNone;
  float scale = 1.f;  ///< kScale's factor
};

/// y[outer, inner] from x[outer, r, inner] as above; r >= 1. Max and Min of a
/// NaN are NaN (ONNX Runtime's ReduceMax). Built for AVX-512, AVX2 and the
/// baseline (ForCpuIsa, cpu_isa.h); every build gives the same bits.
void ReduceMiddle(const ReduceStep& step, const float* x, float* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner);

}  // namespace onnxfuse::backend
