// Which vector instructions our own kernels use (backend/kernels/activation.h,
// backend/kernels/layout.h): the widest the CPU runs, no wider than oneDNN may use.
#pragma once

namespace onnxfuse::backend {

enum class Isa { kAvx512, kAvx2, kScalar };

/// AVX-512 (avx512f), AVX2 with FMA, or plain C++; decided once, at first
/// use. ONEDNN_MAX_CPU_ISA (AVX2, SSE41, ...) caps it as it caps oneDNN, so
/// that a run standing in for an older CPU is one (the ctest variants
/// backend_ops.activation.{AVX2,SSE41} and kernels.{AVX2,SSE41} rely on that).
Isa CpuIsa();

/// Of three builds of one kernel, compiled for AVX-512 (avx512f), for AVX2 and
/// for the baseline, the one CpuIsa() allows. GCC's target_clones would choose
/// by the CPU alone, past the cap, and leave the AVX2 build untested on an
/// AVX-512 machine.
template <typename Fn>
Fn ForCpuIsa(Fn avx512, Fn avx2, Fn baseline) {
  switch (CpuIsa()) {
    case Isa::kAvx512: return avx512;
    case Isa::kAvx2: return avx2;
    default: return baseline;
  }
}

}  // namespace onnxfuse::backend
