#include "backend/runtime/cpu_requirement.h"

#include <dnnl.hpp>

#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"

namespace onnxfuse {

std::string CpuIsaName() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other (dnnl::cpu_isa " + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa())) + ")";
  }
}

namespace backend {

void RequireAvx2(const std::string& what) {
  // oneDNN's cpu_isa values are bit sets, each ISA a superset of those below.
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
  if ((effective & avx2) != avx2)
    throw Error(ErrorKind::kUnsupported, what + ": this CPU runs oneDNN at " + CpuIsaName() +
                                             " (ONEDNN_MAX_CPU_ISA may cap it); onnx-fuse's executable plans need "
                                             "AVX2 with FMA");
}

}  // namespace backend
}  // namespace onnxfuse
