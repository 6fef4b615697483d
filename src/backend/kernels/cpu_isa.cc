#include "backend/kernels/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace onnxfuse::backend {

namespace {

Isa PickIsa() {
  __builtin_cpu_init();
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::string cap = env ? env : "";
  std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char c) { return std::toupper(c); });
  const bool avx512_allowed = cap.empty() || cap == "ALL" || cap.rfind("AVX512", 0) == 0 || cap.rfind("AVX10", 0) == 0;
  const bool avx2_allowed = avx512_allowed || cap.rfind("AVX2", 0) == 0;
  if (avx512_allowed && __builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (avx2_allowed && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  return Isa::kScalar;
}

}  // namespace

Isa CpuIsa() {
  static const Isa isa = PickIsa();
  return isa;
}

}  // namespace onnxfuse::backend
