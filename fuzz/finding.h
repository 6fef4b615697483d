// What the fuzz targets count as a finding. A user-facing onnxfuse::Error is
// the expected outcome for bad input; a kInternal Error (exit code 70) or any
// other exception is a finding, reported on stderr as "FINDING: what: message"
// and ended with abort() so that libFuzzer (and the replay of tests/CMakeLists.txt)
// sees a crash. Crashes, sanitizer reports, hangs and running out of memory
// are findings of their own.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "onnxfuse/error.h"

namespace onnxfuse::fuzz {

[[noreturn]] inline void Finding(const char* what, const char* message) {
  std::fprintf(stderr, "FINDING: %s: %s\n", what, message);
  std::abort();
}

/// Runs `run` (one input through a target): returns when it returns or throws
/// a user-facing Error; any other outcome is a Finding.
template <typename Run>
void RunOneInput(Run&& run) {
  try {
    run();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) Finding("internal error (exit code 70)", e.what());
  } catch (const std::exception& e) {
    Finding("unexpected exception", e.what());
  }
}

}  // namespace onnxfuse::fuzz
