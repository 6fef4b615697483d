#include "max_pool_kernel.h"

#include <algorithm>
#include <limits>

namespace onnxfuse::backend {

namespace {

// Output vector `out` (`n` <= kChunk lanes from lane `first`) of the window
// rows [h0, h1) x columns [w0, w1): the max kept in a local array, which the
// compiler holds in registers (out and the input may not alias it).
constexpr std::int64_t kChunk = 16;

template <std::int64_t kLanes>
inline void PoolVector(const float* __restrict plane, float* __restrict out, std::int64_t lanes, std::int64_t n,
                       std::int64_t h0, std::int64_t h1, std::int64_t w0, std::int64_t w1, std::int64_t in_w) {
  float acc[kChunk];
  for (std::int64_t l = 0; l < kChunk; ++l) acc[l] = -std::numeric_limits<float>::infinity();
  for (std::int64_t ih = h0; ih < h1; ++ih)
    for (std::int64_t iw = w0; iw < w1; ++iw) {
      const float* in = plane + (ih * in_w + iw) * lanes;
      if (kLanes > 0) {
        for (std::int64_t l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], in[l]);
      } else {
        for (std::int64_t l = 0; l < n; ++l) acc[l] = std::max(acc[l], in[l]);
      }
    }
  for (std::int64_t l = 0; l < (kLanes > 0 ? kLanes : n); ++l) out[l] = acc[l];
}

// One output row of one plane; kLanes (8, 16) fixes the lane count at
// compile time, 0 reads it from `s` (nhwc: chunks of kChunk lanes).
template <std::int64_t kLanes>
inline void PoolRow(const float* plane, float* out, std::int64_t oh, const MaxPoolShape& s) {
  const std::int64_t lanes = kLanes > 0 ? kLanes : s.lanes;
  const std::int64_t top = oh * s.stride_h - s.pad_top;
  const std::int64_t h0 = std::max<std::int64_t>(top, 0), h1 = std::min(top + s.kernel_h, s.in_h);
  for (std::int64_t ow = 0; ow < s.out_w; ++ow, out += lanes) {
    const std::int64_t left = ow * s.stride_w - s.pad_left;
    const std::int64_t w0 = std::max<std::int64_t>(left, 0), w1 = std::min(left + s.kernel_w, s.in_w);
    for (std::int64_t first = 0; first < lanes; first += kChunk)
      PoolVector<kLanes>(plane + first, out + first, lanes, std::min(kChunk, lanes - first), h0, h1, w0, w1, s.in_w);
  }
}

template <std::int64_t kLanes>
inline void Pool(const float* src, float* dst, const MaxPoolShape& s) {
  const std::int64_t lanes = kLanes > 0 ? kLanes : s.lanes;
  const std::int64_t rows = s.planes * s.out_h;
#pragma omp parallel for schedule(static) if (rows * s.out_w * lanes > 16384)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t plane = r / s.out_h, oh = r % s.out_h;
    PoolRow<kLanes>(src + plane * s.in_h * s.in_w * lanes, dst + r * s.out_w * lanes, oh, s);
  }
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void MaxPool2d(const float* src, float* dst,
                                                                            const MaxPoolShape& shape) {
  if (shape.lanes == 8) Pool<8>(src, dst, shape);
  else if (shape.lanes == 16) Pool<16>(src, dst, shape);
  else Pool<0>(src, dst, shape);
}

}  // namespace onnxfuse::backend
