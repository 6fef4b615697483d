// The CPU an executable plan needs: AVX2 with FMA, as oneDNN sees it (its
// effective ISA, which ONEDNN_MAX_CPU_ISA caps). Our kernels' fast paths are
// AVX2 and AVX-512, and every CPU onnx-fuse is built and measured for has
// AVX2; below it oneDNN falls to other implementations whose accuracy and
// layouts the lowering is not tested against, so such a CPU is refused.
#pragma once

#include <string>

namespace onnxfuse::backend {

/// Throws Error(kUnsupported) naming the effective ISA (CpuIsaName()) when it
/// is below AVX2; `what` names what was being compiled.
void RequireAvx2(const std::string& what);

}  // namespace onnxfuse::backend
