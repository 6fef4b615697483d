#include "backend/runtime/arena.h"

#include <catch2/catch.hpp>

namespace onnxfuse::backend {
namespace {

bool Overlap(std::int64_t a, std::int64_t a_bytes, std::int64_t b, std::int64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

TEST_CASE("buffers alive at once get disjoint ranges, aligned", "[arena]") {
  std::vector<BufferLifetime> buffers = {{100, 0, 2}, {300, 1, 3}, {50, 2, 2}, {200, 4, 5}};
  ArenaLayout layout = LayOutArena(buffers, 64);
  REQUIRE(layout.offsets.size() == buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    CHECK(layout.offsets[i] % 64 == 0);
    CHECK(layout.offsets[i] + buffers[i].bytes <= layout.total_bytes);
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      bool alive_together = buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last;
      if (alive_together)
        CHECK_FALSE(Overlap(layout.offsets[i], buffers[i].bytes, layout.offsets[j], buffers[j].bytes));
    }
  }
}

TEST_CASE("a buffer reuses the memory of one that died, largest placed first", "[arena]") {
  // 300 bytes (steps 1-3) is placed first at 0; 200 bytes (steps 4-5) outlives
  // nothing it meets, so it reuses offset 0; 100 and 50 bytes, alive with the
  // 300, go above it (aligned to 64: 320 and 448).
  std::vector<BufferLifetime> buffers = {{100, 0, 2}, {300, 1, 3}, {50, 2, 2}, {200, 4, 5}};
  ArenaLayout layout = LayOutArena(buffers, 64);
  CHECK(layout.offsets[1] == 0);
  CHECK(layout.offsets[3] == 0);
  CHECK(layout.offsets[0] == 320);
  CHECK(layout.offsets[2] == 448);
  CHECK(layout.total_bytes == 512);
}

TEST_CASE("no buffers: an empty arena", "[arena]") {
  ArenaLayout layout = LayOutArena({});
  CHECK(layout.offsets.empty());
  CHECK(layout.total_bytes == 0);
}

}  // namespace
}  // namespace onnxfuse::backend
