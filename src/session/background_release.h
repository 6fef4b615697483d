// Drops a session's references to what it no longer needs on a thread of its
// own, so that the call that evicts a schedule does not wait for its
// destruction.
//
// A session serving text of varying length compiles nearly every call's
// length and evicts a schedule from its LRU cache at each one (past
// shape_cache_size). Destroying a schedule frees its graph (the model's
// structure and its value types at that shape: some thousand small protobuf
// allocations) and its plans: on a Zen 4, for the BERT-shaped encoder, about
// a fifth of what a new length costs (perf, 121 lengths, 1 thread). Here it
// runs beside the call on another core, or after it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxfuse::session {

class BackgroundRelease {
 public:
  BackgroundRelease() = default;
  /// Drops what is still queued, then joins the thread.
  ~BackgroundRelease();
  BackgroundRelease(const BackgroundRelease&) = delete;
  BackgroundRelease& operator=(const BackgroundRelease&) = delete;

  /// Queues `object`'s reference to be dropped on the release thread (started
  /// on first use). The object is destroyed there unless someone else still
  /// holds it, who then destroys it as usual. Thread-safe.
  void Release(std::shared_ptr<const void> object);

 private:
  void Work();

  std::mutex mutex_;
  std::condition_variable queued_;
  std::vector<std::shared_ptr<const void>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace onnxfuse::session
