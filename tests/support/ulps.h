// Distance in float ulps, for tests that hold a kernel to a few ulps of a
// long double reference (softmax, log_softmax).
#pragma once

#include <cmath>
#include <limits>

namespace onnxfuse::test {

/// |y - exact| in float ulps at the exact value's size: the gap from
/// |float(exact)| to the next float away from 0 (subnormal gaps included, so
/// a tiny result is held to the same count). An exact value that rounds to 0
/// must be exactly 0: anything else is infinitely many ulps.
inline double Ulps(float y, long double exact) {
  const float rounded = std::fabs(static_cast<float>(exact));
  if (rounded == 0) return y == 0 ? 0 : std::numeric_limits<double>::infinity();
  const double ulp = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
  return static_cast<double>(std::fabs(static_cast<long double>(y) - exact)) / ulp;
}

}  // namespace onnxfuse::test
