// The peak fp32 multiply-add rate of one core of this machine, in GFLOPS:
// the reference for scripts/bench.sh's "resnet50 within 85% of peak" line.
//
// Twelve independent vector accumulators, each updated acc = acc * m + a (one
// fused multiply-add) per iteration: more chains than FMA latency times FMA
// ports (4 cycles x 2 ports on Skylake-X and Zen 3: 8), so the loop is bound
// by FMA throughput alone, the rate a GEMM's inner kernel approaches. The
// widest ISA the CPU has: AVX-512 (16 floats per FMA), else AVX2 + FMA (8).
//
// On a CPU with AVX-512 VNNI it also measures the peak int8 rate, the
// reference of the int8 benchmark: twelve chains of vpdpbusd, each adding
// 16 lanes x 4 products of u8 and s8 into int32 (64 multiply-adds, 128
// operations) per instruction.
//
//   build/onnxfuse_peak_gflops [SECONDS]   prints "peak_gflops_per_core <rate> <isa>", then
//                                          "peak_int8_gops_per_core <rate> avx512_vnni" where it can
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kChains = 12;

template <typename Vec>
__attribute__((always_inline)) inline double Run(long iterations) {
  Vec acc[kChains], m, a;
  for (int i = 0; i < kChains; ++i) acc[i] = Vec{} + 1.0f + 0.001f * static_cast<float>(i);
  m = Vec{} + 0.999999f;
  a = Vec{} + 1e-7f;
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12  // every chain in a register of its own
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * m + a;
  }
  double sink = 0;
  for (int i = 0; i < kChains; ++i) sink += static_cast<double>(acc[i][0]);
  return sink;  // used, so the loop is not removed
}

__attribute__((target("avx512f"))) double RunAvx512(long iterations) {
  typedef float Vec __attribute__((vector_size(64)));
  return Run<Vec>(iterations);
}

__attribute__((target("avx2,fma"))) double RunAvx2(long iterations) {
  typedef float Vec __attribute__((vector_size(32)));
  return Run<Vec>(iterations);
}

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

// The best rate of `run` over bursts for `seconds`, in G operations per
// second, at `ops` operations per iteration: other load on the machine only
// slows a burst down.
template <typename Run>
double BestRate(double seconds, double ops, Run run, double& sink) {
  run(1 << 20);  // warm-up: the clock ramps up
  double best = 0;
  const long iterations = 1 << 22;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += run(iterations);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, ops * static_cast<double>(iterations) / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    std::fprintf(stderr, "peak_gflops: this CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }
  const int lanes = avx512 ? 16 : 8;
  double sink = 0;
  const double best = BestRate(seconds, 2.0 * lanes * kChains, [&](long n) { return avx512 ? RunAvx512(n) : RunAvx2(n); },
                               sink);
  std::printf("peak_gflops_per_core %.1f %s\n", best, avx512 ? "avx512" : "avx2");
  if (avx512 && __builtin_cpu_supports("avx512vnni"))
    std::printf("peak_int8_gops_per_core %.1f avx512_vnni\n", BestRate(seconds, 128.0 * kChains, RunVnni, sink));
  return sink == 12345.0 ? 2 : 0;
}
