// Where (ONNX Operators.md, Where-16): out = cond ? x : y elementwise, the
// three operands multidirectionally broadcast (broadcast.h). cond is a bool
// tensor held as int64 (the runtime's storage of bool, builder.h); x, y and
// out are float32. All dense row-major. Built for AVX-512, AVX2 and the
// baseline, chosen by CpuIsa() (cpu_isa.h).
#pragma once

#include <cstdint>

#include "backend/kernels/broadcast.h"

namespace onnxfuse::backend {

/// out[i] = cond[i] != 0 ? x[i] : y[i] over the plan's output, each operand
/// read through its broadcast strides (plan operands in the order cond, x, y).
void WhereSelect(const std::int64_t* cond, const float* x, const float* y, float* out, const BroadcastPlan<3>& plan);

}  // namespace onnxfuse::backend
