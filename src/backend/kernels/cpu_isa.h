// Which vector instructions our own kernels use (backend/kernels/activation.h,
// backend/kernels/layout.h): the widest the CPU runs, no wider than oneDNN may use.
#pragma once

namespace onnxfuse::backend {

enum class Isa { kAvx512, kAvx2, kScalar };

/// AVX-512 (avx512f), AVX2 with FMA, or plain C++; decided once, at first
/// use. ONEDNN_MAX_CPU_ISA (AVX2, SSE41, ...) caps it as it caps oneDNN, so
/// that a run standing in for an older CPU is one (the ctest variants
/// backend_ops.activation.{AVX2,SSE41} rely on that).
Isa CpuIsa();

}  // namespace onnxfuse::backend
