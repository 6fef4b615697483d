#include "backend/kernels/layout.h"

#include <immintrin.h>

#include <algorithm>
#include <array>

#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

// 16 pixels of three planes c0, c1, c2 make 48 interleaved floats: three
// vectors, lane l of vector k holding channel j % 3 of pixel j / 3, j = 16 k + l.
// Each is two two-source permutes: first c0 and c1 (index p, or 16 + p), then
// that and c2 (keep lane l, or take 16 + p).
struct Interleave3 {
  std::array<std::array<int, 16>, 3> first{}, second{};
  Interleave3() {
    for (int k = 0; k < 3; ++k)
      for (int l = 0; l < 16; ++l) {
        const int j = 16 * k + l, pixel = j / 3, channel = j % 3;
        first[k][l] = channel == 0 ? pixel : channel == 1 ? 16 + pixel : 0;
        second[k][l] = channel == 2 ? 16 + pixel : l;
      }
  }
};

__attribute__((target("avx512f"))) void PixelsAvx512(const float* src, float* dst, std::int64_t pixels,
                                                      std::int64_t begin, std::int64_t end) {
  static const Interleave3 index;
  __m512i first[3], second[3];
  for (int k = 0; k < 3; ++k) {
    first[k] = _mm512_loadu_si512(index.first[k].data());
    second[k] = _mm512_loadu_si512(index.second[k].data());
  }
  std::int64_t p = begin;
  for (; p + 16 <= end; p += 16) {
    const __m512 c0 = _mm512_loadu_ps(src + p), c1 = _mm512_loadu_ps(src + pixels + p),
                 c2 = _mm512_loadu_ps(src + 2 * pixels + p);
    for (int k = 0; k < 3; ++k)
      _mm512_storeu_ps(dst + 3 * p + 16 * k,
                       _mm512_permutex2var_ps(_mm512_permutex2var_ps(c0, first[k], c1), second[k], c2));
  }
  for (; p < end; ++p)
    for (int c = 0; c < 3; ++c) dst[3 * p + c] = src[c * pixels + p];
}

}  // namespace

bool HaveNchwToNhwc3() { return CpuIsa() == Isa::kAvx512; }

void NchwToNhwc3(const float* src, float* dst, std::int64_t images, std::int64_t pixels) {
  constexpr std::int64_t kBlock = 4096;  // pixels per task: 48 KiB read, 48 KiB written
  const std::int64_t blocks = (pixels + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(static) if (images * blocks > 1)
  for (std::int64_t n = 0; n < images; ++n)
    for (std::int64_t b = 0; b < blocks; ++b)
      PixelsAvx512(src + n * 3 * pixels, dst + n * 3 * pixels, pixels, b * kBlock,
                   std::min(pixels, (b + 1) * kBlock));
}

void StridedCopy(const float* src, const std::vector<std::int64_t>& src_strides, float* dst,
                 const std::vector<std::int64_t>& dst_strides, const std::vector<std::int64_t>& dims) {
  const std::size_t rank = dims.size();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  for (std::int64_t d : dims)
    if (d == 0) return;
  const std::int64_t n = dims[rank - 1], si = src_strides[rank - 1], di = dst_strides[rank - 1];
  std::vector<std::int64_t> at(rank - 1, 0);  // the index of the current row, outer dims
  std::int64_t s_off = 0, d_off = 0;
  while (true) {
    const float* from = src + s_off;
    float* to = dst + d_off;
    if (si == 1 && di == 1) std::copy(from, from + n, to);
    else
      for (std::int64_t j = 0; j < n; ++j) to[j * di] = from[j * si];
    // The next row: the last outer index that has room left, the ones after it back to 0.
    std::size_t k = rank - 1;
    while (k > 0) {
      --k;
      s_off += src_strides[k];
      d_off += dst_strides[k];
      if (++at[k] < dims[k]) break;
      s_off -= src_strides[k] * dims[k];
      d_off -= dst_strides[k] * dims[k];
      at[k] = 0;
      if (k == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace onnxfuse::backend
