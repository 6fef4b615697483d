// Placing activation buffers in one arena by their lifetimes.
//
// Algorithm: "greedy by size" offset calculation from Pisarchyk & Lee,
// "Efficient Memory Management for Deep Neural Net Inference" (2020,
// arXiv:2001.03288), the strategy of TensorFlow Lite's GPU memory planner:
// visit buffers from largest to smallest; place each at the lowest offset
// where it does not overlap (in address range) any already placed buffer whose
// lifetime overlaps its own. Lifetimes are closed intervals of step indices, so
// a step's inputs and outputs never share memory. O(n^2) for n buffers.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxfuse::backend {

struct BufferLifetime {
  std::int64_t bytes = 0;
  int first = 0;  ///< first step that touches it
  int last = 0;   ///< last step that touches it (inclusive)
};

struct ArenaLayout {
  std::vector<std::int64_t> offsets;  ///< per buffer, multiples of `alignment`
  std::int64_t total_bytes = 0;       ///< arena size
};

/// Offsets (bytes) of `buffers` in one arena, each a multiple of `alignment`
/// (bytes), no two buffers whose lifetimes overlap sharing an address; the
/// arena's size is the largest end. Greedy by size (see above).
ArenaLayout LayOutArena(const std::vector<BufferLifetime>& buffers, std::int64_t alignment = 64);

}  // namespace onnxfuse::backend
