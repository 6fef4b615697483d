// The ceilings of this machine's roofline, for scripts/bench.sh: the peak fp32
// multiply-add rate of one core in GFLOPS (the reference of its "resnet50
// within 85% of peak" line and of the roofline column), and the rate at which
// one core and all cores read memory in GB/s. Both are measured by
// backend/kernels/machine_peaks.h, which `run --profile` uses too.
//
// On a CPU with AVX-512 VNNI it also measures the peak int8 rate, the
// reference of the int8 benchmark: twelve chains of vpdpbusd, each adding
// 16 lanes x 4 products of u8 and s8 into int32 (64 multiply-adds, 128
// operations) per instruction.
//
//   build/onnxfuse_peak_gflops [SECONDS]   prints "peak_gflops_per_core <rate> <isa>", then
//                                          "peak_int8_gops_per_core <rate> avx512_vnni" where it can,
//                                          "read_gbps <rate> 1", "read_gbps <rate> <all cores>"
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "backend/kernels/machine_peaks.h"

namespace {

constexpr int kChains = 12;

__attribute__((target("avx512f,avx512vnni"))) double RunVnni(long iterations) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i u = _mm512_set1_epi8(1), s = _mm512_set1_epi8(-1);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  }
  alignas(64) int lanes[16];
  double sink = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_si512(lanes, acc[i]);
    sink += static_cast<double>(lanes[0]);
  }
  return sink;
}

// The best rate of RunVnni over bursts for `seconds`, in G operations per second.
double BestVnniRate(double seconds, double& sink) {
  sink += RunVnni(1 << 20);  // warm-up: the clock ramps up
  double best = 0;
  const long iterations = 1 << 22;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += RunVnni(iterations);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 128.0 * kChains * static_cast<double>(iterations) / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const char* isa = "none";
  const double peak = onnxfuse::backend::PeakGflopsPerCore(seconds, &isa);
  if (peak == 0) {
    std::fprintf(stderr, "peak_gflops: this CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }
  std::printf("peak_gflops_per_core %.1f %s\n", peak, isa);
  double sink = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
    std::printf("peak_int8_gops_per_core %.1f avx512_vnni\n", BestVnniRate(seconds, sink));
  const int cores = omp_get_num_procs();
  std::printf("read_gbps %.1f 1\n", onnxfuse::backend::ReadBandwidthGbps(1, seconds));
  if (cores > 1) std::printf("read_gbps %.1f %d\n", onnxfuse::backend::ReadBandwidthGbps(cores, seconds), cores);
  return sink == 12345.0 ? 2 : 0;
}
