// The two ceilings of the roofline model (S. Williams, A. Waterman, D.
// Patterson, "Roofline: An Insightful Visual Performance Model for Multicore
// Architectures", CACM 2009), measured on this machine: the peak fp32
// multiply-add rate of one core and the rate at which cores read memory.
// `run --profile` places each step against them; scripts/peak_gflops.cc prints
// them for scripts/bench.sh.
#pragma once

namespace onnxfuse::backend {

/// The peak fp32 rate of one core in GFLOPS (a multiply-add counted as 2):
/// twelve independent vector accumulators, each updated by one fused
/// multiply-add per iteration (more chains than FMA latency times FMA ports,
/// 4 cycles x 2 ports, so the loop is bound by FMA throughput alone: the rate
/// a GEMM's inner kernel approaches), in the widest ISA the CPU has (AVX-512,
/// else AVX2 with FMA; 0 without either), best of bursts over `seconds`:
/// other load on the machine only slows a burst down. `isa` is set to
/// "avx512", "avx2" or "none".
double PeakGflopsPerCore(double seconds, const char** isa = nullptr);

/// The rate in GB/s (1e9 bytes per second) at which `threads` OpenMP threads
/// read a buffer of 256 MB, far larger than any last-level cache, each its own
/// contiguous share, summing it with vector adds: the memory ceiling. Best of
/// passes over `seconds`.
double ReadBandwidthGbps(int threads, double seconds);

}  // namespace onnxfuse::backend
