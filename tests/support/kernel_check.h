// What the kernel testers of tests/unit/backend/kernels/ share (in the manner
// of XNNPACK's microkernel testers): seeded random buffers, the epilogue of
// our GEMM-like kernels (PointwiseOp) in double with a bound on its rounding,
// and an element-by-element comparison that names the first elements that
// differ. Header-only: onnxfuse_kernel_tests links onnxfuse_kernels alone.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/kernels/pointwise.h"

namespace onnxfuse::test {

using backend::PointwiseOp;

/// `n` floats uniform in [lo, hi), the same for the same seed.
inline std::vector<float> RandomFloats(std::size_t n, std::uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& e : v) e = dist(rng);
  return v;
}

/// Whether the CPU itself runs AVX2 with FMA / AVX-512 (avx512f), whatever
/// ONEDNN_MAX_CPU_ISA says: the kernels that have one path only (gemm.h,
/// winograd.h, pointwise.h, layout.h) run wherever the hardware has it.
/// Product of `dims` (1 for a scalar).
inline std::int64_t Count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

/// Flat index into a dense operand of dims `in` of output element `i` of dims
/// `out`, by ONNX's broadcasting rule (Broadcasting.md: dims right-aligned, a
/// dim of 1 repeated), computed directly: the reference of the broadcast plans.
inline std::int64_t BroadcastSourceIndex(std::int64_t i, const std::vector<std::int64_t>& out,
                                         const std::vector<std::int64_t>& in) {
  std::int64_t index = 0, in_stride = 1;
  for (std::size_t d = out.size(); d-- > 0;) {
    const std::int64_t coord = i % out[d];
    i /= out[d];
    const std::size_t from_right = out.size() - 1 - d;
    if (from_right < in.size()) {
      const std::int64_t dim = in[in.size() - 1 - from_right];
      if (dim != 1) index += coord * in_stride;
      in_stride *= dim;
    }
  }
  return index;
}

inline bool CpuRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
inline bool CpuRunsAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

/// For a kernel with a single ISA path: true, after printing "SKIPPED: why"
/// on stdout, when this CPU does not run it (`runs` false). The test case then
/// returns; ctest reports it as skipped, not passed (tests/CMakeLists.txt:
/// SKIP_REGULAR_EXPRESSION). Such test cases carry the tag [needs_avx2] or
/// [needs_avx512], which the whole-binary runs under an ISA cap leave out.
inline bool SkippedWithout(bool runs, const char* why) {
  if (!runs) std::cout << "SKIPPED: " << why << std::endl;
  return !runs;
}

/// A value computed in double and a bound on the float kernel's rounding
/// error in it: the sum of the magnitudes of the terms that made it, carried
/// through the epilogue (scaled by each step's Lipschitz constant).
struct Expected {
  double value = 0, magnitude = 0;
};

/// One epilogue step (backend/kernels/pointwise.h, PointwiseOp) in double: kAdd
/// adds `addend`, kClamp clamps to [a, b], kLinear is a y + b, kHardSwish
/// y clamp(a y + b, 0, 1), kSwish y / (1 + exp(-y)).
inline Expected ApplyOp(Expected y, const PointwiseOp& op, double addend) {
  switch (op.kind) {
    case PointwiseOp::Kind::kAdd: return {y.value + addend, y.magnitude + std::abs(addend)};
    case PointwiseOp::Kind::kClamp: return {std::min(std::max(y.value, double{op.a}), double{op.b}), y.magnitude};
    case PointwiseOp::Kind::kLinear:
      return {op.a * y.value + op.b, std::abs(double{op.a}) * y.magnitude + std::abs(double{op.b})};
    case PointwiseOp::Kind::kHardSwish: {
      const double gate = std::min(std::max(op.a * y.value + op.b, 0.0), 1.0);
      // d/dy of y gate(y) is gate + a y inside the ramp: at most 1 + |a y|.
      return {y.value * gate, (1 + std::abs(op.a * y.value)) * y.magnitude};
    }
    case PointwiseOp::Kind::kSwish: {
      // d/dy of swish is at most 1.1; the kernels' exp adds some 2e-7 of |y| (vector_math.h).
      const double value = y.value / (1 + std::exp(-y.value));
      return {value, 1.1 * y.magnitude + std::abs(y.value)};
    }
  }
  return y;
}

/// The epilogue's steps in order; `addend` is what kAdd adds here.
inline Expected ApplyEpilogue(Expected y, const std::vector<PointwiseOp>& epilogue, double addend) {
  for (const PointwiseOp& op : epilogue) y = ApplyOp(y, op, addend);
  return y;
}

/// The epilogues every GEMM-like kernel is tested with: none, each kind of
/// step alone, and chains (MobileNet's Clip(0, 6), HardSwish's a = 1/6,
/// b = 1/2). `add_first`: kernels that take the residual only as the first
/// step (gemm.h, winograd.h) get it there.
inline std::vector<std::vector<PointwiseOp>> EpiloguesToTest(bool add_first) {
  using K = PointwiseOp::Kind;
  const PointwiseOp add{K::kAdd, 0, 0}, relu{K::kClamp, 0, std::numeric_limits<float>::infinity()},
      relu6{K::kClamp, 0, 6}, linear{K::kLinear, -1.5f, 0.25f}, hardswish{K::kHardSwish, 1.f / 6, 0.5f},
      swish{K::kSwish, 0, 0};
  std::vector<std::vector<PointwiseOp>> all = {{},
                                               {add},
                                               {relu},
                                               {relu6},
                                               {linear},
                                               {hardswish},
                                               {swish},
                                               {add, relu},
                                               {add, swish},
                                               {linear, hardswish, relu6},
                                               {linear, swish, relu6},
                                               {add, linear, relu}};
  if (!add_first) all.push_back({relu, linear, add, hardswish});
  return all;
}

/// A readable epilogue, for INFO.
inline std::string Describe(const std::vector<PointwiseOp>& epilogue) {
  std::ostringstream s;
  for (const PointwiseOp& op : epilogue) {
    const char* names[] = {"add", "clamp", "linear", "hardswish", "swish"};
    s << names[static_cast<int>(op.kind)];
    if (op.kind != PointwiseOp::Kind::kAdd) s << "(" << op.a << ", " << op.b << ")";
    s << " ";
  }
  return s.str().empty() ? "none" : s.str();
}

/// Every element of `got` against `want`: |got - want| <= rel * magnitude +
/// abs. NaN matches NaN, an infinity the same one. Fails once, naming the
/// count of mismatches and the first few (index, got, want).
inline void CheckAll(const float* got, const std::vector<Expected>& want, double rel, double abs = 0) {
  std::size_t bad = 0;
  std::ostringstream first;
  first.precision(9);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i].value;
    const bool ok = g == w || (std::isnan(g) && std::isnan(w)) || std::abs(g - w) <= rel * want[i].magnitude + abs;
    if (!ok && bad++ < 5)
      first << "  [" << i << "] got " << g << ", want " << w << " (tol " << rel * want[i].magnitude + abs << ")\n";
  }
  INFO(bad << " of " << want.size() << " elements differ:\n" << first.str());
  CHECK(bad == 0);
}

/// A buffer with a guard of NaN-free sentinels after its `size` floats, to
/// find a kernel writing past its end.
struct Guarded {
  static constexpr std::size_t kGuard = 64;
  static constexpr float kSentinel = -12345.f;
  std::vector<float> data;
  explicit Guarded(std::size_t size, float fill = kSentinel) : data(size + kGuard, kSentinel) {
    std::fill(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(size), fill);
  }
  float* get() { return data.data(); }
  bool GuardIntact() const {
    return std::all_of(data.end() - kGuard, data.end(), [](float v) { return v == kSentinel; });
  }
};

}  // namespace onnxfuse::test
