#include "backend/kernels/broadcast_binary.h"

#include <algorithm>

#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

template <BinaryAlg kAlg>
[[gnu::always_inline]] inline float Op(float x, float y) {
  if constexpr (kAlg == BinaryAlg::kAdd) return x + y;
  if constexpr (kAlg == BinaryAlg::kSub) return x - y;
  if constexpr (kAlg == BinaryAlg::kMul) return x * y;
  if constexpr (kAlg == BinaryAlg::kDiv) return x / y;
  if constexpr (kAlg == BinaryAlg::kMax) return x != x || x > y ? x : y;
  if constexpr (kAlg == BinaryAlg::kPRelu) return x < 0.f ? y * x : x;
  return x != x || x < y ? x : y;  // kMin
}

// One row of n outputs, each operand stepping along it by 1 or, where its last
// dim is broadcast, by 0: one loop per case, so that each is a plain
// contiguous loop the compiler vectorises (a stride known only at run time,
// x[j * step], leaves the loop scalar).
template <BinaryAlg kAlg>
[[gnu::always_inline]] inline void Row(const float* x, const float* y, float* dst, std::int64_t n, bool x_steps,
                                       bool y_steps) {
  if (x_steps && y_steps) {
    for (std::int64_t j = 0; j < n; ++j) dst[j] = Op<kAlg>(x[j], y[j]);
  } else if (x_steps) {
    const float y0 = *y;
    for (std::int64_t j = 0; j < n; ++j) dst[j] = Op<kAlg>(x[j], y0);
  } else if (y_steps) {
    const float x0 = *x;
    for (std::int64_t j = 0; j < n; ++j) dst[j] = Op<kAlg>(x0, y[j]);
  } else {
    std::fill(dst, dst + n, Op<kAlg>(*x, *y));
  }
}

[[gnu::always_inline]] inline void AnyRow(BinaryAlg alg, const float* x, const float* y, float* dst, std::int64_t n,
                                          bool x_steps, bool y_steps) {
  switch (alg) {
    case BinaryAlg::kAdd: return Row<BinaryAlg::kAdd>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kSub: return Row<BinaryAlg::kSub>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kMul: return Row<BinaryAlg::kMul>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kDiv: return Row<BinaryAlg::kDiv>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kMax: return Row<BinaryAlg::kMax>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kMin: return Row<BinaryAlg::kMin>(x, y, dst, n, x_steps, y_steps);
    case BinaryAlg::kPRelu: return Row<BinaryAlg::kPRelu>(x, y, dst, n, x_steps, y_steps);
  }
}

// AnyRow built once per instruction set (ForCpuIsa chooses). Each output is
// one IEEE operation, so every build gives the same bits.
using RowFn = void (*)(BinaryAlg, const float*, const float*, float*, std::int64_t, bool, bool);
__attribute__((target("avx512f"))) void RowAvx512(BinaryAlg alg, const float* x, const float* y, float* dst,
                                                 std::int64_t n, bool x_steps, bool y_steps) {
  AnyRow(alg, x, y, dst, n, x_steps, y_steps);
}
__attribute__((target("avx2"))) void RowAvx2(BinaryAlg alg, const float* x, const float* y, float* dst, std::int64_t n,
                                             bool x_steps, bool y_steps) {
  AnyRow(alg, x, y, dst, n, x_steps, y_steps);
}
void RowBaseline(BinaryAlg alg, const float* x, const float* y, float* dst, std::int64_t n, bool x_steps,
                 bool y_steps) {
  AnyRow(alg, x, y, dst, n, x_steps, y_steps);
}

}  // namespace

void BroadcastBinary(BinaryAlg alg, const float* a, const float* b, float* out, const BroadcastPlan<2>& plan) {
  static const RowFn row = ForCpuIsa<RowFn>(RowAvx512, RowAvx2, RowBaseline);
  const std::int64_t n = plan.inner;
  const bool a_steps = plan.inner_step[0] != 0, b_steps = plan.inner_step[1] != 0;
  if (n == 0) return;
  ForEachBroadcastRow(plan, [&](std::int64_t o, const std::array<std::int64_t, 2>& at) {
    row(alg, a + at[0], b + at[1], out + o, n, a_steps, b_steps);
  });
}

}  // namespace onnxfuse::backend
