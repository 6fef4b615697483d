#include "backend/kernels/select.h"

#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

// One row of n outputs, each operand stepping along it by 1 (kC, kX, kY) or,
// where its last dim is broadcast, by 0: strides known at compile time, so
// that the loop vectorises (a stride known only at run time leaves it scalar).
template <bool kC, bool kX, bool kY>
[[gnu::always_inline]] inline void Row(const std::int64_t* c, const float* a, const float* b, float* dst,
                                       std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) dst[j] = c[kC ? j : 0] != 0 ? a[kX ? j : 0] : b[kY ? j : 0];
}

// `steps`: bit 2 cond steps along the row, bit 1 x, bit 0 y.
[[gnu::always_inline]] inline void AnyRow(int steps, const std::int64_t* c, const float* a, const float* b,
                                          float* dst, std::int64_t n) {
  switch (steps) {
    case 0: return Row<false, false, false>(c, a, b, dst, n);
    case 1: return Row<false, false, true>(c, a, b, dst, n);
    case 2: return Row<false, true, false>(c, a, b, dst, n);
    case 3: return Row<false, true, true>(c, a, b, dst, n);
    case 4: return Row<true, false, false>(c, a, b, dst, n);
    case 5: return Row<true, false, true>(c, a, b, dst, n);
    case 6: return Row<true, true, false>(c, a, b, dst, n);
    default: return Row<true, true, true>(c, a, b, dst, n);
  }
}

// AnyRow built once per instruction set (ForCpuIsa chooses); a selection
// copies bits, so every build gives the same ones.
using RowFn = void (*)(int, const std::int64_t*, const float*, const float*, float*, std::int64_t);
__attribute__((target("avx512f"))) void RowAvx512(int steps, const std::int64_t* c, const float* a, const float* b,
                                                 float* dst, std::int64_t n) {
  AnyRow(steps, c, a, b, dst, n);
}
__attribute__((target("avx2"))) void RowAvx2(int steps, const std::int64_t* c, const float* a, const float* b,
                                             float* dst, std::int64_t n) {
  AnyRow(steps, c, a, b, dst, n);
}
void RowBaseline(int steps, const std::int64_t* c, const float* a, const float* b, float* dst, std::int64_t n) {
  AnyRow(steps, c, a, b, dst, n);
}

}  // namespace

void WhereSelect(const std::int64_t* cond, const float* x, const float* y, float* out, const BroadcastPlan<3>& plan) {
  static const RowFn row = ForCpuIsa<RowFn>(RowAvx512, RowAvx2, RowBaseline);
  const std::int64_t n = plan.inner;
  const int steps = (plan.inner_step[0] != 0 ? 4 : 0) | (plan.inner_step[1] != 0 ? 2 : 0) | (plan.inner_step[2] != 0 ? 1 : 0);
  if (n == 0) return;
  ForEachBroadcastRow(plan, [&](std::int64_t o, const std::array<std::int64_t, 3>& at) {
    row(steps, cond + at[0], x + at[1], y + at[2], out + o, n);
  });
}

}  // namespace onnxfuse::backend
