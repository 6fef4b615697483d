#include "backend/runtime/arena.h"

#include <algorithm>
#include <numeric>

namespace onnxfuse::backend {

ArenaLayout LayOutArena(const std::vector<BufferLifetime>& buffers, std::int64_t alignment) {
  auto aligned = [&](std::int64_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;
  for (std::size_t i : order) {
    const BufferLifetime& buf = buffers[i];
    // Address ranges of placed buffers alive at the same time, by offset.
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (std::size_t j : placed)
      if (buffers[j].first <= buf.last && buf.first <= buffers[j].last)
        busy.emplace_back(layout.offsets[j], layout.offsets[j] + aligned(buffers[j].bytes));
    std::sort(busy.begin(), busy.end());
    std::int64_t offset = 0, size = aligned(buf.bytes);
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;  // fits in the gap before this range
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    placed.push_back(i);
  }
  return layout;
}

}  // namespace onnxfuse::backend
