// This thread's OpenMP team size set for a scope and restored after.
//
// oneDNN's OpenMP build fixes a primitive's team when the primitive (and its
// descriptor's scratchpad) is made, and our kernels read omp_get_max_threads()
// when they run; both are per calling thread. A step or a schedule that must
// run on one thread is therefore made, and run, inside such a scope.
#pragma once

#include <omp.h>

namespace onnxfuse {

class OmpTeam {
 public:
  /// Sets the calling thread's team to `threads` when > 0 (0: leaves it as it is).
  explicit OmpTeam(int threads) : before_(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~OmpTeam() { omp_set_num_threads(before_); }
  OmpTeam(const OmpTeam&) = delete;
  OmpTeam& operator=(const OmpTeam&) = delete;

 private:
  int before_;
};

}  // namespace onnxfuse
