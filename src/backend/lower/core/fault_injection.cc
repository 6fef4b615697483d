#include "backend/lower/core/fault_injection.h"

#include <atomic>

namespace onnxfuse::backend {

namespace {
std::atomic<FaultHook> hook{nullptr};
}  // namespace

void SetFaultHook(FaultHook h) { hook.store(h); }

void InjectFault(Builder& b, const std::vector<NodeId>& unit) {
  if (FaultHook h = hook.load()) h(b, unit);
}

}  // namespace onnxfuse::backend
