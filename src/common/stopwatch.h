// Wall-clock milliseconds since a point in time: the unit every timing of
// onnx-fuse reports (load_ms, compile_ms, the run job's per-inference times).
#pragma once

#include <chrono>

namespace onnxfuse {

/// Milliseconds of std::chrono::steady_clock since `start`.
inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace onnxfuse
