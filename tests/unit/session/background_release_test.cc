// BackgroundRelease (src/session/background_release.h): a released object
// is destroyed on the release thread, not the caller's; one still held
// elsewhere lives on; the destructor drops whatever is still queued.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "session/background_release.h"

using onnxfuse::session::BackgroundRelease;

namespace {

// Records the thread it is destroyed on.
struct Tracked {
  Tracked(std::atomic<int>* counter, std::thread::id* thread) : count(counter), where(thread) {}
  ~Tracked() {
    *where = std::this_thread::get_id();
    count->fetch_add(1);
  }
  std::atomic<int>* count;
  std::thread::id* where;
};

bool WaitFor(const std::atomic<int>& count, int value) {
  for (int i = 0; i < 2000 && count.load() < value; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return count.load() >= value;
}

}  // namespace

TEST_CASE("a released object is destroyed on the release thread", "[background_release]") {
  std::atomic<int> destroyed{0};
  std::thread::id where;
  BackgroundRelease release;
  release.Release(std::make_shared<Tracked>(&destroyed, &where));
  REQUIRE(WaitFor(destroyed, 1));
  CHECK(where != std::this_thread::get_id());
}

TEST_CASE("an object someone still holds outlives its release", "[background_release]") {
  std::atomic<int> destroyed{0};
  std::thread::id where;
  auto held = std::make_shared<Tracked>(&destroyed, &where);
  {
    BackgroundRelease release;
    release.Release(held);
  }  // the thread joined: its reference is gone
  CHECK(destroyed.load() == 0);
  CHECK(held.use_count() == 1);
  held.reset();
  CHECK(destroyed.load() == 1);
  CHECK(where == std::this_thread::get_id());
}

TEST_CASE("the destructor drops everything still queued", "[background_release]") {
  std::atomic<int> destroyed{0};
  std::thread::id where;
  {
    BackgroundRelease release;
    for (int i = 0; i < 100; ++i) release.Release(std::make_shared<Tracked>(&destroyed, &where));
  }
  CHECK(destroyed.load() == 100);
}
