#include "session/heap_reuse.h"

#include <cstdlib>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onnxfuse::session {

void KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* tunable : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"})
      if (std::getenv(tunable) != nullptr) return;  // the user's choice
    constexpr int kMmapThreshold = 32 << 20;  // glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
    constexpr int kTrimThreshold = 256 << 20;
    mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
  });
#endif
}

}  // namespace onnxfuse::session
