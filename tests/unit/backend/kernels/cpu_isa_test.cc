// CpuIsa() (src/backend/kernels/cpu_isa.h): the widest of AVX-512, AVX2+FMA
// and plain C++ the CPU runs, capped as oneDNN is by ONEDNN_MAX_CPU_ISA. The
// ISA a cap should give is worked out here from the CPU's features and the
// cap's name (oneDNN's names: ALL, AVX512_*, AVX10_*, AVX2*, anything below
// AVX2), and checked in this process (plain, or as ctest's kernels.AVX2 and
// kernels.SSE41) and, since CpuIsa() decides once per process, in a child
// process per cap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/kernels/cpu_isa.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

const char* Name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kScalar: return "scalar";
  }
  return "?";
}

// The ISA `cap` (ONEDNN_MAX_CPU_ISA's value, any case; "" for none) allows on this CPU.
Isa Expected(std::string cap) {
  std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char c) { return std::toupper(c); });
  const auto starts = [&](const char* prefix) { return cap.rfind(prefix, 0) == 0; };
  const bool allows_avx512 = cap.empty() || cap == "ALL" || starts("AVX512") || starts("AVX10");
  if (allows_avx512 && test::CpuRunsAvx512()) return Isa::kAvx512;
  if ((allows_avx512 || starts("AVX2")) && test::CpuRunsAvx2()) return Isa::kAvx2;
  return Isa::kScalar;
}

}  // namespace

TEST_CASE("CpuIsa: the CPU's widest ISA, no wider than this process's ONEDNN_MAX_CPU_ISA", "[kernels][cpu_isa]") {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  INFO("ONEDNN_MAX_CPU_ISA=" << (cap ? cap : "(unset)") << ", CpuIsa() " << Name(CpuIsa()));
  CHECK(Name(CpuIsa()) == std::string(Name(Expected(cap ? cap : ""))));
}

TEST_CASE("CpuIsa: each cap of oneDNN's, in a process of its own", "[kernels][cpu_isa]") {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const char* cap : {"", "ALL", "avx512_core", "AVX512_CORE_AMX", "AVX10_1_512", "AVX2", "avx2_vnni", "AVX",
                          "SSE41"}) {
    const std::string expected = Name(Expected(cap));
    INFO("ONEDNN_MAX_CPU_ISA=" << cap << ": expected " << expected);
    const std::string command = "ONEDNN_MAX_CPU_ISA='" + std::string(cap) + "' ONNXFUSE_TEST_EXPECTED_ISA=" + expected +
                                " '" + self + "' '[.cpu_isa_child]' > /dev/null";
    CHECK(std::system(command.c_str()) == 0);
  }
}

// Run by the test above only (hidden): CpuIsa() is ONNXFUSE_TEST_EXPECTED_ISA.
TEST_CASE("CpuIsa in a child process", "[.cpu_isa_child]") {
  const char* expected = std::getenv("ONNXFUSE_TEST_EXPECTED_ISA");
  REQUIRE(expected != nullptr);
  CHECK(Name(CpuIsa()) == std::string(expected));
}
