#include "backend/kernels/select.h"

namespace onnxfuse::backend {

void WhereSelect(const std::int64_t* cond, const float* x, const float* y, float* out, const BroadcastPlan<3>& plan) {
  const std::int64_t n = plan.inner, sc = plan.inner_step[0], sx = plan.inner_step[1], sy = plan.inner_step[2];
  ForEachBroadcastRow(plan, [&](std::int64_t o, const std::array<std::int64_t, 3>& at) {
    const std::int64_t* c = cond + at[0];
    const float* a = x + at[1];
    const float* b = y + at[2];
    float* dst = out + o;
    for (std::int64_t j = 0; j < n; ++j) dst[j] = c[j * sc] != 0 ? a[j * sx] : b[j * sy];
  });
}

}  // namespace onnxfuse::backend
