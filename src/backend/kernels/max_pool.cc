#include "backend/kernels/max_pool.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/kernels/cpu_isa.h"

// The Vec8 helpers below are always inlined into the row function's builds;
// GCC warns of their ABI in the baseline one, where no caller outside sees them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace onnxfuse::backend {

namespace {

// Eight lanes as one GCC vector: one AVX2 register (two SSE, half an AVX-512
// one); `a > b ? a : b` is (v)maxps.
using Vec8 = float __attribute__((vector_size(32)));

[[gnu::always_inline]] inline Vec8 Load8(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void Store8(float* p, Vec8 v) { std::memcpy(p, &v, sizeof v); }
[[gnu::always_inline]] inline Vec8 Max8(Vec8 a, Vec8 b) { return a > b ? a : b; }

// acc[i] = max(acc[i], in[i]) for i < n.
[[gnu::always_inline]] inline void MaxInto(float* __restrict acc, const float* __restrict in, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) Store8(acc + i, Max8(Load8(acc + i), Load8(in + i)));
  for (; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
}

// One output row of one plane, separably (max is associative): `column`
// [in_w][lanes] first takes the max of the window's input rows, then each
// output the max of its window's columns. A 3x3 window at stride 1 costs 4
// vector maxima per output instead of 8. kLanes (8, 16) fixes the lane count
// at compile time, 0 reads it from `s` (nhwc: all channels).
template <std::int64_t kLanes>
[[gnu::always_inline]] inline void PoolRow(const float* plane, float* out, float* column, std::int64_t oh, const MaxPoolShape& s) {
  const std::int64_t lanes = kLanes > 0 ? kLanes : s.lanes, row = s.in_w * lanes;
  const std::int64_t top = oh * s.stride_h - s.pad_top;
  const std::int64_t h0 = std::max<std::int64_t>(top, 0), h1 = std::min(top + s.kernel_h, s.in_h);
  if (h0 >= h1) {  // no input row in the window
    std::fill(out, out + s.out_w * lanes, -std::numeric_limits<float>::infinity());
    return;
  }
  std::memcpy(column, plane + h0 * row, static_cast<std::size_t>(row) * sizeof(float));
  for (std::int64_t ih = h0 + 1; ih < h1; ++ih) MaxInto(column, plane + ih * row, row);
  for (std::int64_t ow = 0; ow < s.out_w; ++ow, out += lanes) {
    const std::int64_t left = ow * s.stride_w - s.pad_left;
    const std::int64_t w0 = std::max<std::int64_t>(left, 0), w1 = std::min(left + s.kernel_w, s.in_w);
    if (w0 >= w1) {
      std::fill(out, out + lanes, -std::numeric_limits<float>::infinity());
      continue;
    }
    std::int64_t l = 0;
    for (; l + 8 <= lanes; l += 8) {
      Vec8 acc = Load8(column + w0 * lanes + l);
      for (std::int64_t iw = w0 + 1; iw < w1; ++iw) acc = Max8(acc, Load8(column + iw * lanes + l));
      Store8(out + l, acc);
    }
    for (; l < lanes; ++l) {
      float acc = column[w0 * lanes + l];
      for (std::int64_t iw = w0 + 1; iw < w1; ++iw) acc = std::max(acc, column[iw * lanes + l]);
      out[l] = acc;
    }
  }
}

// One output row at the plane's lane count, built once per instruction set:
// GCC vectorizes the Vec8 maxima and the loops for each (ForCpuIsa chooses).
[[gnu::always_inline]] inline void PoolRowAnyLanes(const float* plane, float* out, float* column, std::int64_t oh,
                                                   const MaxPoolShape& s) {
  if (s.lanes == 8) PoolRow<8>(plane, out, column, oh, s);
  else if (s.lanes == 16) PoolRow<16>(plane, out, column, oh, s);
  else PoolRow<0>(plane, out, column, oh, s);
}
using PoolRowFn = void (*)(const float*, float*, float*, std::int64_t, const MaxPoolShape&);
__attribute__((target("avx512f"))) void PoolRowAvx512(const float* plane, float* out, float* column, std::int64_t oh,
                                                     const MaxPoolShape& s) {
  PoolRowAnyLanes(plane, out, column, oh, s);
}
__attribute__((target("avx2"))) void PoolRowAvx2(const float* plane, float* out, float* column, std::int64_t oh,
                                                 const MaxPoolShape& s) {
  PoolRowAnyLanes(plane, out, column, oh, s);
}
void PoolRowBaseline(const float* plane, float* out, float* column, std::int64_t oh, const MaxPoolShape& s) {
  PoolRowAnyLanes(plane, out, column, oh, s);
}

}  // namespace

void MaxPool2d(const float* src, float* dst, const MaxPoolShape& s) {
  static const PoolRowFn pool_row = ForCpuIsa<PoolRowFn>(PoolRowAvx512, PoolRowAvx2, PoolRowBaseline);
  const std::int64_t rows = s.planes * s.out_h, plane_size = s.in_h * s.in_w * s.lanes;
#pragma omp parallel if (rows * s.out_w * s.lanes > 16384)
  {
    // Per thread, kept across calls (no allocation per pooling): one row of column maxima.
    thread_local std::vector<float> column;
    column.resize(static_cast<std::size_t>(s.in_w * s.lanes));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r)
      pool_row(src + r / s.out_h * plane_size, dst + r * s.out_w * s.lanes, column.data(), r % s.out_h, s);
  }
}

}  // namespace onnxfuse::backend
