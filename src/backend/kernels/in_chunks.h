// The parallel loop of the elementwise kernels: a range cut into chunks that
// OpenMP threads take in a static schedule.
#pragma once

#include <algorithm>
#include <cstdint>

namespace onnxfuse::backend {

/// Calls fn(begin, n) for consecutive chunks of `chunk` elements (the last may
/// be shorter) covering [0, count), in parallel. One chunk (a
/// squeeze-and-excitation vector, say) runs on the calling thread: no team to
/// wake. `chunk` should be a multiple of every vector width, so that only the
/// last chunk has a tail.
template <typename Fn>
void InChunks(std::int64_t count, std::int64_t chunk, const Fn& fn) {
  const std::int64_t chunks = (count + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) fn(c * chunk, std::min(chunk, count - c * chunk));
}

}  // namespace onnxfuse::backend
