#include "backend/kernels/gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/pointwise_avx2.h"

namespace onnxfuse::backend {

namespace {

constexpr int kMicroRows = 6;
// Rows per packed block: 20 micro-kernels share each panel slice read into L1.
constexpr std::int64_t kBlockRows = 120;
// Depth per block: at most this many, in equal parts (768 -> 2 x 384).
constexpr std::int64_t kMaxDepthBlock = 512;

// What the micro-kernel does besides accumulating: where its block of depth
// lies (the first starts from bias and addend, the last applies the rest of
// the epilogue and stores the result).
struct Tile {
  std::int64_t row_stride = 0, vector_stride = 8;  // floats between c's (and addend's) rows, and 8-column vectors
  const float* bias = nullptr;    // at the tile's first column
  const float* addend = nullptr;  // at the tile's first element
  const PointwiseOp* ops = nullptr;
  std::size_t op_count = 0;
  bool first = false, last = false;
};

// Software prefetch of the next panel slice into L2 (T. Mowry, M. Lam, A.
// Gupta, ASPLOS 1992), one cache line every 8 k-steps, spread over the
// micro-kernels that read the current slice. With weights from memory (a
// 7x7 convolution's 9.4 MB, read once per inference) this GEMM ran at 75
// GFLOPS, 87 with them in cache; prefetching, 85.
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;  // next == end: nothing (left) to prefetch
};

// R rows x 16 columns of c (strides in `tile`) += packed rows [kc][6] x
// panel slice [kc][16].
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void Micro(const float* rows, const float* panel,
                                                                   std::int64_t kc, float* c, const Tile& tile,
                                                                   Prefetch& prefetch) {
  const std::int64_t rs = tile.row_stride, vs = tile.vector_stride;
  // Every loop over the accumulators fully unrolled: indexed by a variable,
  // the array would live in memory, not in registers.
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      if (!tile.first) {
        acc[r][v] = _mm256_loadu_ps(c + r * rs + v * vs);
      } else {
        acc[r][v] = tile.bias ? _mm256_loadu_ps(tile.bias + 8 * v) : _mm256_setzero_ps();
        if (tile.addend) acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_loadu_ps(tile.addend + r * rs + v * vs));
      }
    }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + k * kGemmPanel), w1 = _mm256_loadu_ps(panel + k * kGemmPanel + 8);
    if ((k & 7) == 0 && prefetch.next < prefetch.end) {
      _mm_prefetch(prefetch.next, _MM_HINT_T1);
      prefetch.next += 64;
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(rows + k * kMicroRows + r);
      acc[r][0] = _mm256_fmadd_ps(x, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, w1, acc[r][1]);
    }
  }
  // The residual (kAdd) was taken at the first block.
  for (std::size_t i = 0; tile.last && i < tile.op_count; ++i)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) acc[r][v] = ApplyPointwise(acc[r][v], tile.ops[i]);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * rs + v * vs, acc[r][v]);
}

__attribute__((target("avx2,fma"))) void MicroRows(int rows, const float* packed, const float* panel, std::int64_t kc,
                                                  float* c, const Tile& tile, Prefetch& prefetch) {
  switch (rows) {
    case 6: Micro<6>(packed, panel, kc, c, tile, prefetch); break;
    case 5: Micro<5>(packed, panel, kc, c, tile, prefetch); break;
    case 4: Micro<4>(packed, panel, kc, c, tile, prefetch); break;
    case 3: Micro<3>(packed, panel, kc, c, tile, prefetch); break;
    case 2: Micro<2>(packed, panel, kc, c, tile, prefetch); break;
    default: Micro<1>(packed, panel, kc, c, tile, prefetch); break;
  }
}

// A block's mc rows as ceil(mc / 6) groups of near-equal size, one
// micro-kernel each: 49 rows (a 7x7 map) as 4 x 6 + 5 x 5, not 8 x 6 + 1. A
// group of one row runs its two FMA chains at their latency, a third of the
// six-row rate, so that split cost 6% of a 7x7 convolution's time.
struct RowGroups {
  std::int64_t rows, count;
  explicit RowGroups(std::int64_t mc) : rows(mc), count((mc + kMicroRows - 1) / kMicroRows) {}
  std::int64_t Start(std::int64_t g) const { return g * rows / count; }
  std::int64_t Size(std::int64_t g) const { return Start(g + 1) - Start(g); }
  // Row r < 6 of group g; a group's missing rows repeat its last (read, never stored).
  std::int64_t Row(std::int64_t g, std::int64_t r) const { return Start(g) + std::min(r, Size(g) - 1); }
};

// Which part of a block to pack: rows [m0, m0 + mc) (as RowGroups(mc)),
// depth [k0, k0 + kc), and of its groups those in [group_begin, group_end):
// the threads of one product pack a block together.
struct PackPart {
  std::int64_t m0 = 0, mc = 0, k0 = 0, kc = 0, group_begin = 0, group_end = 0;
};

// A block of a's rows as [groups][kc][6] (RowGroups); `packed` is the
// block's start.
void PackRows(const float* a, std::int64_t depth, const PackPart& part, float* packed) {
  const std::int64_t m0 = part.m0, k0 = part.k0, kc = part.kc;
  const RowGroups groups(part.mc);
  for (std::int64_t g = part.group_begin; g < part.group_end; ++g)
    for (std::int64_t r = 0; r < kMicroRows; ++r) {
      const float* src = a + (m0 + groups.Row(g, r)) * depth + k0;
      float* dst = packed + g * kc * kMicroRows + r;
      for (std::int64_t k = 0; k < kc; ++k) dst[k * kMicroRows] = src[k];
    }
}

// in[0..7] (rows of 8 floats) transposed in place: in[l] = {in[0][l], ..., in[7][l]}.
__attribute__((target("avx2"), always_inline)) inline void Transpose8x8(__m256 in[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      u[4 * i + j] = _mm256_shuffle_ps(t[4 * i + j], t[4 * i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * i + j + 2] = _mm256_shuffle_ps(t[4 * i + j], t[4 * i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  // u[0]: lanes 0 (rows 0-3) and 4 (rows 0-3 in the high half); u[4] the same for rows 4-7.
  const int order[4] = {0, 2, 1, 3};  // u[j] holds lane order[j] (low half) and order[j] + 4 (high half)
  for (int j = 0; j < 4; ++j) {
    in[order[j]] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
    in[order[j] + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
  }
}

// PackConvRows when every run of 8 columns is one 8-channel block of one tap
// (channels, k0 and kc multiples of 8): per block, the 6 rows' 8 floats are
// loaded as vectors and transposed; each column is stored as 8 floats (the
// last 2 overwritten by the next column), the last of every 8 as 6: after a
// group's last 8 lies the next group, which may be another thread's.
__attribute__((target("avx2"))) void PackConvRowsBlocked(const float* x, const GemmConvRows& s, const PackPart& part,
                                                         float* packed) {
  const std::int64_t m0 = part.m0, k0 = part.k0, kc = part.kc;
  const std::int64_t plane = s.in_h * s.in_w * 8;
  const RowGroups groups(part.mc);
  for (std::int64_t g = part.group_begin; g < part.group_end; ++g) {
    std::int64_t oh[kMicroRows], ow[kMicroRows];
    for (std::int64_t r = 0; r < kMicroRows; ++r) {
      const std::int64_t m = m0 + groups.Row(g, r);
      oh[r] = m / s.out_w, ow[r] = m % s.out_w;
    }
    float* dst = packed + g * kc * kMicroRows;
    for (std::int64_t k = k0; k < k0 + kc; k += 8, dst += 8 * kMicroRows) {
      const std::int64_t tap = k / s.channels, block = (k % s.channels) / 8;
      const std::int64_t kh = tap / s.kernel_w, kw = tap % s.kernel_w;
      __m256 v[8];
      const __m256 scale = s.channel_scale ? _mm256_loadu_ps(s.channel_scale + block * 8) : _mm256_set1_ps(1.0f);
      for (std::int64_t r = 0; r < kMicroRows; ++r) {
        const std::int64_t ih = oh[r] * s.stride_h - s.pad_top + kh, iw = ow[r] * s.stride_w - s.pad_left + kw;
        v[r] = ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w
                   ? _mm256_setzero_ps()
                   : _mm256_mul_ps(_mm256_loadu_ps(x + block * plane + (ih * s.in_w + iw) * 8), scale);
      }
      v[6] = v[7] = _mm256_setzero_ps();
      Transpose8x8(v);
      for (int l = 0; l < 7; ++l) _mm256_storeu_ps(dst + l * kMicroRows, v[l]);
      _mm_storeu_ps(dst + 7 * kMicroRows, _mm256_castps256_ps128(v[7]));
      _mm_storel_pi(reinterpret_cast<__m64*>(dst + 7 * kMicroRows + 4), _mm256_extractf128_ps(v[7], 1));
    }
  }
}

// The same for the rows of a convolution (GemmConvRows) over x.
void PackConvRows(const float* x, const GemmConvRows& s, const PackPart& part, float* packed) {
  const std::int64_t m0 = part.m0, k0 = part.k0, kc = part.kc;
  const std::int64_t plane = s.in_h * s.in_w * 8;  // floats per block of 8 channels
  const RowGroups groups(part.mc);
  for (std::int64_t g = part.group_begin; g < part.group_end; ++g)
    for (std::int64_t r = 0; r < kMicroRows; ++r) {
      const std::int64_t m = m0 + groups.Row(g, r), oh = m / s.out_w, ow = m % s.out_w;
      float* dst = packed + g * kc * kMicroRows + r;
      // One tap's run of channels at a time.
      for (std::int64_t k = k0; k < k0 + kc;) {
        const std::int64_t tap = k / s.channels, c = k % s.channels, n = std::min(s.channels - c, k0 + kc - k);
        const std::int64_t ih = oh * s.stride_h - s.pad_top + tap / s.kernel_w;
        const std::int64_t iw = ow * s.stride_w - s.pad_left + tap % s.kernel_w;
        float* d = dst + (k - k0) * kMicroRows;
        if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) {
          for (std::int64_t j = 0; j < n; ++j) d[j * kMicroRows] = 0.0f;
        } else {
          const float* pixel = x + (ih * s.in_w + iw) * 8;
          for (std::int64_t j = 0; j < n; ++j)
            d[j * kMicroRows] = pixel[((c + j) >> 3) * plane + ((c + j) & 7)] * (s.channel_scale ? s.channel_scale[c + j] : 1.0f);
        }
        k += n;
      }
    }
}

// The depth of every block: at most kMaxDepthBlock, in equal parts, each a
// multiple of 8 (PackConvRowsBlocked's channel blocks).
std::int64_t DepthBlock(std::int64_t depth) {
  const std::int64_t blocks = (depth + kMaxDepthBlock - 1) / kMaxDepthBlock;
  return ((depth + blocks - 1) / blocks + 7) / 8 * 8;
}

// Thread t of `threads` (OpenMP's, inside the product's parallel region):
// columns [n_begin, n_end) (whole panels) of c, all rows. Per block of rows
// and depth the threads pack the rows together into `packed` (shared: each
// thread a share of the row groups, not all of them), then each multiplies
// them by its panels.
void Columns(const float* a, const float* w, const float* bias, const float* addend, float* c, const GemmShape& s,
             const std::vector<PointwiseOp>& epilogue, const GemmLayout& layout, std::int64_t n_begin,
             std::int64_t n_end, float* packed, std::int64_t threads, std::int64_t t) {
  const std::int64_t kc_max = DepthBlock(s.depth);
  // Whole 8-channel blocks: then depth is a multiple of 8, and so is every kc.
  const bool blocked_rows = layout.conv && layout.conv->channels % 8 == 0;
  const bool add_first = !epilogue.empty() && epilogue[0].kind == PointwiseOp::Kind::kAdd;
  Tile tile;  // what every tile shares; the rest is set per tile
  tile.row_stride = layout.blocked_c ? 8 : s.cols;
  tile.vector_stride = layout.blocked_c ? 8 * s.rows : 8;
  tile.ops = epilogue.data() + (add_first ? 1 : 0);
  tile.op_count = epilogue.size() - (add_first ? 1 : 0);
  for (std::int64_t k0 = 0; k0 < s.depth; k0 += kc_max) {
    const std::int64_t kc = std::min(kc_max, s.depth - k0);
    for (std::int64_t m0 = 0; m0 < s.rows; m0 += kBlockRows) {
      const std::int64_t mc = std::min(kBlockRows, s.rows - m0);
      const RowGroups groups(mc);
      PackPart part{m0, mc, k0, kc, groups.count * t / threads, groups.count * (t + 1) / threads};
      if (blocked_rows) PackConvRowsBlocked(a, *layout.conv, part, packed);
      else if (layout.conv) PackConvRows(a, *layout.conv, part, packed);
      else PackRows(a, s.depth, part, packed);
      if (threads > 1) {
#pragma omp barrier
      }
      for (std::int64_t n0 = n_begin; n0 < n_end; n0 += kGemmPanel) {
        const float* panel = w + n0 * s.depth + k0 * kGemmPanel;
        // The next slice: the next panel's, or the next depth block's first.
        Prefetch prefetch;
        const float* next = n0 + kGemmPanel < n_end ? panel + kGemmPanel * s.depth
                            : k0 + kc < s.depth     ? w + n_begin * s.depth + (k0 + kc) * kGemmPanel
                                                    : nullptr;
        prefetch.next = reinterpret_cast<const char*>(next);
        if (prefetch.next) prefetch.end = prefetch.next + kc * kGemmPanel * static_cast<std::int64_t>(sizeof(float));
        for (std::int64_t g = 0; g < groups.count; ++g) {
          const std::int64_t row = m0 + groups.Start(g);
          // The tile's first element: row `row`, column n0.
          const std::int64_t at = layout.blocked_c ? n0 * s.rows + row * 8 : row * s.cols + n0;
          tile.first = k0 == 0, tile.last = k0 + kc == s.depth;
          tile.bias = bias ? bias + n0 : nullptr;
          tile.addend = add_first ? addend + at : nullptr;
          MicroRows(static_cast<int>(groups.Size(g)), packed + g * kMicroRows * kc, panel, kc, c + at, tile,
                    prefetch);
        }
      }
      if (threads > 1) {
#pragma omp barrier  // every thread is done with `packed` before the next block is packed into it
      }
    }
  }
}

}  // namespace

bool HaveGemm() { return CpuIsa() == Isa::kAvx2; }

void Gemm(const float* a, const float* w, const float* bias, const float* addend, float* c, const GemmShape& shape,
          const std::vector<PointwiseOp>& epilogue, const GemmLayout& layout) {
  const std::int64_t panels = shape.cols / kGemmPanel;
  // One packed block of rows, shared by the threads; grows once per calling thread.
  thread_local std::vector<float> packed;
  packed.resize(static_cast<std::size_t>((kBlockRows + kMicroRows - 1) / kMicroRows * kMicroRows *
                                         DepthBlock(shape.depth)));
  float* shared = packed.data();
  // On the calling thread alone for a small product, or inside another
  // kernel's parallel region (a nested region would run on one thread anyway,
  // and libomp loses the team it allocates for one when the root is a
  // std::thread).
  if (panels < 2 || shape.rows * shape.depth * shape.cols <= (1 << 18) || omp_get_level() > 0) {
    Columns(a, w, bias, addend, c, shape, epilogue, layout, 0, panels * kGemmPanel, shared, 1, 0);
    return;
  }
#pragma omp parallel
  {
    // Each thread a contiguous range of column panels: its share of the
    // weights, read once.
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t begin = panels * t / threads * kGemmPanel, end = panels * (t + 1) / threads * kGemmPanel;
    Columns(a, w, bias, addend, c, shape, epilogue, layout, begin, end, shared, threads, t);
  }
}

}  // namespace onnxfuse::backend
