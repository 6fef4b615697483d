#include "backend/kernels/machine_peaks.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>

namespace onnxfuse::backend {

namespace {

constexpr int kChains = 12;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

template <typename Vec>
[[gnu::always_inline]] inline double Chains(long iterations) {
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

__attribute__((target("avx512f"))) double ChainsAvx512(long iterations) {
  typedef float Vec __attribute__((vector_size(64)));
  return Chains<Vec>(iterations);
}

__attribute__((target("avx2,fma"))) double ChainsAvx2(long iterations) {
  typedef float Vec __attribute__((vector_size(32)));
  return Chains<Vec>(iterations);
}

// The sum of n floats, eight vector accumulators (independent adds: the loop
// waits on memory, not on the adds).
__attribute__((target("avx2"))) float SumAvx2(const float* x, std::size_t n) {
  typedef float Vec __attribute__((vector_size(32)));
  Vec acc[8] = {};
  for (std::size_t i = 0; i + 64 <= n; i += 64)
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      Vec v;
      __builtin_memcpy(&v, x + i + 8 * j, sizeof v);
      acc[j] += v;
    }
  float sum = 0;
  for (const Vec& v : acc)
    for (int j = 0; j < 8; ++j) sum += v[j];
  return sum;
}

}  // namespace

double PeakGflopsPerCore(double seconds, const char** isa) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa) *isa = avx512 ? "avx512" : avx2 ? "avx2" : "none";
  if (!avx512 && !avx2) return 0;
  const double flops_per_iteration = 2.0 * (avx512 ? 16 : 8) * kChains;
  auto run = [&](long n) { return avx512 ? ChainsAvx512(n) : ChainsAvx2(n); };
  volatile double sink = run(1 << 20);  // warm-up: the clock ramps up
  double best = 0;
  const long iterations = 1 << 22;
  const auto start = std::chrono::steady_clock::now();
  do {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + run(iterations);
    best = std::max(best, flops_per_iteration * static_cast<double>(iterations) / Seconds(t0) / 1e9);
  } while (Seconds(start) < seconds);
  return best;
}

double ReadBandwidthGbps(int threads, double seconds) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return 0;
  constexpr std::size_t kBytes = std::size_t{256} << 20, kFloats = kBytes / sizeof(float);
  std::unique_ptr<float[]> buffer(new float[kFloats]);
  threads = std::max(1, threads);
  // Each thread writes its own share first (its pages are then its own, and present).
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < kFloats; ++i) buffer[i] = 1.0f;
  volatile float sink = 0;
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  do {
    const auto t0 = std::chrono::steady_clock::now();
    float sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      const std::size_t n = static_cast<std::size_t>(omp_get_num_threads()),
                        t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t begin = kFloats / n * t / 64 * 64, end = t + 1 == n ? kFloats : kFloats / n * (t + 1) / 64 * 64;
      sum += SumAvx2(buffer.get() + begin, end - begin);
    }
    sink = sink + sum;
    best = std::max(best, static_cast<double>(kBytes) / Seconds(t0) / 1e9);
  } while (Seconds(start) < seconds);
  return best;
}

}  // namespace onnxfuse::backend
