// What a compiled plan executes per inference and how much memory it holds:
// InferenceSession's PlanStatsFor and SessionStats (session.h), `onnx-fuse run
// --json`.
#pragma once

#include <cstdint>

namespace onnxfuse {

/// What a compiled plan executes per inference and how much memory it holds.
struct PlanStats {
  int kernels = 0;                         ///< primitives executed per Run, reorders included
  int reorders = 0;                        ///< of which layout conversions or copies
  std::int64_t arena_bytes = 0;            ///< the activation arena (peak activation memory)
  std::int64_t buffer_bytes_total = 0;     ///< sum of the plan's activation buffers, without reuse
  std::int64_t intermediate_bytes_total = 0;  ///< sum of all non-constant values of the ONNX graph
  std::int64_t scratchpad_bytes = 0;       ///< one scratchpad shared by all steps: oneDNN's and our kernels' (Winograd)
  std::int64_t weight_bytes = 0;           ///< weights, biases and other constants, as reordered
  /// Wall-clock milliseconds the Compile call that made the plan took: lowering
  /// every group, creating its oneDNN primitives (timing candidate
  /// implementations where impl_choice does), packing its weights, laying out
  /// the arena. Not loading or fusing the model.
  double compile_ms = 0;
};

}  // namespace onnxfuse
