#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include "session/heap_reuse.h"

using namespace onnxfuse;

// A sanitizer serves malloc itself (GCC defines __SANITIZE_*, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ONNXFUSE_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ONNXFUSE_SANITIZER_MALLOC 1
#endif
#endif

namespace {

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Page faults of one call that allocates, fills and frees three tensors of
// 20 MiB: glibc's own thresholds (raised to 20 MiB by the first free) put
// them on the heap, then give the 60 MiB freed at its top back to the kernel.
long FaultsOfOneCall() {
  constexpr std::size_t kBytes = 20 << 20;
  const long before = MinorFaults();
  std::unique_ptr<char, decltype(&std::free)> tensors[3] = {{nullptr, &std::free}, {nullptr, &std::free},
                                                           {nullptr, &std::free}};
  for (auto& tensor : tensors) {
    tensor.reset(static_cast<char*>(std::malloc(kBytes)));
    REQUIRE(tensor != nullptr);
    std::memset(tensor.get(), 1, kBytes);
  }
  for (auto& tensor : tensors) tensor.reset();
  return MinorFaults() - before;
}

}  // namespace

TEST_CASE("heap reuse: a block freed by one call is the next call's, without faulting its pages in again",
          "[heap_reuse]") {
  // Reported as skipped (tests/CMakeLists.txt: "SKIPPED:") where glibc's malloc is not the one serving.
#if !defined(__GLIBC__) || defined(ONNXFUSE_SANITIZER_MALLOC)
  std::cout << "SKIPPED: glibc's own malloc only (not another C library's, nor a sanitizer's)" << std::endl;
  return;
#endif
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("GLIBC_TUNABLES")) {
    std::cout << "SKIPPED: the process sets glibc's malloc tunables itself" << std::endl;
    return;
  }
  session::KeepFreedMemoryForReuse();
  FaultsOfOneCall();  // the heap grows once
  const long again = FaultsOfOneCall();  // 15,360 pages of 4 KiB without KeepFreedMemoryForReuse
  INFO("minor faults of the second call: " << again);
  CHECK(again < 64);
}
