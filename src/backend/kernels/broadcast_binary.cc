#include "backend/kernels/broadcast_binary.h"

namespace onnxfuse::backend {

namespace {

// One loop per operation, so that the compiler vectorises each row's loop.
template <typename Op>
void Apply(const float* a, const float* b, float* out, const BroadcastPlan<2>& plan, Op op) {
  const std::int64_t n = plan.inner, sa = plan.inner_step[0], sb = plan.inner_step[1];
  ForEachBroadcastRow(plan, [&](std::int64_t o, const std::array<std::int64_t, 2>& at) {
    const float* x = a + at[0];
    const float* y = b + at[1];
    float* dst = out + o;
    for (std::int64_t j = 0; j < n; ++j) dst[j] = op(x[j * sa], y[j * sb]);
  });
}

}  // namespace

void BroadcastBinary(BinaryAlg alg, const float* a, const float* b, float* out, const BroadcastPlan<2>& plan) {
  switch (alg) {
    case BinaryAlg::kAdd: return Apply(a, b, out, plan, [](float x, float y) { return x + y; });
    case BinaryAlg::kSub: return Apply(a, b, out, plan, [](float x, float y) { return x - y; });
    case BinaryAlg::kMul: return Apply(a, b, out, plan, [](float x, float y) { return x * y; });
    case BinaryAlg::kDiv: return Apply(a, b, out, plan, [](float x, float y) { return x / y; });
    case BinaryAlg::kMax: return Apply(a, b, out, plan, [](float x, float y) { return x != x || x > y ? x : y; });
    case BinaryAlg::kMin: return Apply(a, b, out, plan, [](float x, float y) { return x != x || x < y ? x : y; });
  }
}

}  // namespace onnxfuse::backend
