#include "session/background_release.h"

#include <utility>

namespace onnxfuse::session {

BackgroundRelease::~BackgroundRelease() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  if (thread_.joinable()) thread_.join();
  queue_.clear();  // queued when no thread ran: dropped here
}

void BackgroundRelease::Release(std::shared_ptr<const void> object) {
  if (!object) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(object));
    if (!thread_.joinable()) thread_ = std::thread(&BackgroundRelease::Work, this);
  }
  queued_.notify_one();
}

void BackgroundRelease::Work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::vector<std::shared_ptr<const void>> batch;
    batch.swap(queue_);
    lock.unlock();
    batch.clear();  // the destructors run here, outside the lock
    lock.lock();
  }
}

}  // namespace onnxfuse::session
