#include "backend/kernels/inverted_residual.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/kernels/cpu_isa.h"

// The vector helpers below are always inlined into the builds for each ISA, so
// the ABI of passing a 64-byte vector by value, which GCC warns about, never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace onnxfuse::backend {

namespace {

// Channels per vector and per weight panel. A GCC vector of 16 floats is one
// AVX-512 register, two AVX2 ones, four SSE ones: the kernel is written once
// and built for each (ForCpuIsa chooses).
constexpr std::int64_t kLanes = 16;
typedef float V __attribute__((vector_size(kLanes * sizeof(float))));

std::int64_t Padded(std::int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

[[gnu::always_inline]] inline V Load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void Store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
[[gnu::always_inline]] inline V Splat(float f) { return V{} + f; }

// The first `valid` lanes at p, the rest 0 (a partial panel's tail).
[[gnu::always_inline]] inline V LoadFirst(const float* p, std::int64_t valid) {
  if (valid >= kLanes) return Load(p);
  float tmp[kLanes] = {};
  std::memcpy(tmp, p, static_cast<std::size_t>(valid) * sizeof(float));
  return Load(tmp);
}
[[gnu::always_inline]] inline void StoreFirst(float* p, V v, std::int64_t valid) {
  if (valid >= kLanes) return Store(p, v);
  float tmp[kLanes];
  Store(tmp, v);
  std::memcpy(p, tmp, static_cast<std::size_t>(valid) * sizeof(float));
}

// PointwiseOp on a vector; kAdd reads `addend` (its first `valid` lanes).
[[gnu::always_inline]] inline V Apply(V y, const std::vector<PointwiseOp>& ops, const float* addend,
                                      std::int64_t valid) {
  for (const PointwiseOp& op : ops) {
    switch (op.kind) {
      case PointwiseOp::Kind::kAdd:  // refused where there is no addend (InvertedResidual)
        if (addend) y += LoadFirst(addend, valid);
        break;
      case PointwiseOp::Kind::kClamp:  // max then min, as _mm512_max_ps / min_ps: NaN gives the bound
        y = y > op.a ? y : Splat(op.a);
        y = y < op.b ? y : Splat(op.b);
        break;
      case PointwiseOp::Kind::kLinear: y = y * op.a + op.b; break;
      case PointwiseOp::Kind::kHardSwish: {
        V gate = y * op.a + op.b;
        gate = gate > 0.0f ? gate : Splat(0.0f);
        gate = gate < 1.0f ? gate : Splat(1.0f);
        y = y * gate;
        break;
      }
    }
  }
  return y;
}

// One product operand: a [rows, depth] with row stride lda; w packed in
// panels of kLanes columns, [panels][depth][kLanes]; c [rows, cols] with row
// stride ldc, of which the last panel may be partial; kAdd's addend [rows,
// cols] with row stride ld_addend.
struct Product {
  const float* a;
  std::int64_t lda, depth;
  const float* w;
  const float* bias;
  float* c;
  std::int64_t ldc, cols;
  const std::vector<PointwiseOp>* ops;
  const float* addend;
  std::int64_t ld_addend;
};

// kR rows x kP panels of the product starting at row r, panel p: kR * kP
// accumulators in registers over the whole depth (the micro-kernel of BLIS,
// F. Van Zee, R. van de Geijn, ACM TOMS 2015).
template <int kR, int kP>
[[gnu::always_inline]] inline void Tile(const Product& g, std::int64_t r, std::int64_t p) {
  V acc[kR][kP];
  const float* w = g.w + p * g.depth * kLanes;
#pragma GCC unroll 4
  for (int j = 0; j < kP; ++j) {
    const V b = Load(g.bias + (p + j) * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) acc[i][j] = b;
  }
  const float* a = g.a + r * g.lda;
  for (std::int64_t k = 0; k < g.depth; ++k) {
    V wk[kP];
#pragma GCC unroll 4
    for (int j = 0; j < kP; ++j) wk[j] = Load(w + (j * g.depth + k) * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const V ai = Splat(a[i * g.lda + k]);
#pragma GCC unroll 4
      for (int j = 0; j < kP; ++j) acc[i][j] += ai * wk[j];
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < kP; ++j) {
    const std::int64_t col = (p + j) * kLanes, valid = g.cols - col;
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const float* addend = g.addend ? g.addend + (r + i) * g.ld_addend + col : nullptr;
      StoreFirst(g.c + (r + i) * g.ldc + col, Apply(acc[i][j], *g.ops, addend, valid), valid);
    }
  }
}

// The last `left` (< kR) rows from row r, panel p.
template <int kR, int kP>
[[gnu::always_inline]] inline void TailRows(const Product& g, std::int64_t left, std::int64_t r, std::int64_t p) {
  if constexpr (kR > 1) {
    if (left == kR - 1) return Tile<kR - 1, kP>(g, r, p);
    TailRows<kR - 1, kP>(g, left, r, p);
  }
}

// Rows [0, rows) of the product, kR at a time, each block of rows over every
// panel, kP at a time (the block of a stays in L1 across the panels).
template <int kR, int kP>
[[gnu::always_inline]] inline void Multiply(const Product& g, std::int64_t rows) {
  const std::int64_t panels = (g.cols + kLanes - 1) / kLanes;
  for (std::int64_t r = 0; r < rows; r += kR) {
    const std::int64_t left = std::min<std::int64_t>(kR, rows - r);
    std::int64_t p = 0;
    for (; p + kP <= panels; p += kP) {
      if (left == kR) Tile<kR, kP>(g, r, p);
      else TailRows<kR, kP>(g, left, r, p);
    }
    if constexpr (kP > 1)
      for (; p < panels; ++p) {
        if (left == kR) Tile<kR, 1>(g, r, p);
        else TailRows<kR, 1>(g, left, r, p);
      }
  }
}

// The packed buffer's parts.
struct Parts {
  std::int64_t expanded;  // padded to kLanes
  const float *expand, *expand_bias, *depthwise, *depthwise_bias, *project, *project_bias;
};

Parts PartsOf(const InvertedResidualShape& s, const float* packed) {
  Parts p;
  p.expanded = Padded(s.expanded);
  p.expand = packed;
  p.expand_bias = p.expand + p.expanded * s.in_channels;
  p.depthwise = p.expand_bias + p.expanded;
  p.depthwise_bias = p.depthwise + s.kernel * s.kernel * p.expanded;
  p.project = p.depthwise_bias + p.expanded;
  p.project_bias = p.project + Padded(s.out_channels) * p.expanded;
  return p;
}

// kC vectors of channels from c of one output row of the depthwise
// convolution: rows[kh] the expanded input row tap kh reads (nullptr: in the
// padding), [in_w][channels]; out [out_w][channels]. kC accumulators break the
// chain of FMAs over the taps.
template <int kC>
[[gnu::always_inline]] inline void DepthwiseChannels(const InvertedResidualShape& s, const Parts& p,
                                                     const float* const* rows, std::int64_t c,
                                                     const std::vector<PointwiseOp>& ops, float* out) {
  const std::int64_t channels = p.expanded, k = s.kernel;
  for (std::int64_t ow = 0; ow < s.out_w; ++ow) {
    V acc[kC];
#pragma GCC unroll 4
    for (int j = 0; j < kC; ++j) acc[j] = Load(p.depthwise_bias + c + j * kLanes);
    const std::int64_t iw0 = ow * s.stride - s.pad_left;
    for (std::int64_t kh = 0; kh < k; ++kh) {
      if (!rows[kh]) continue;
      for (std::int64_t kw = 0; kw < k; ++kw) {
        const std::int64_t iw = iw0 + kw;
        if (iw < 0 || iw >= s.in_w) continue;
        const float* e = rows[kh] + iw * channels + c;
        const float* w = p.depthwise + (kh * k + kw) * channels + c;
#pragma GCC unroll 4
        for (int j = 0; j < kC; ++j) acc[j] += Load(e + j * kLanes) * Load(w + j * kLanes);
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < kC; ++j) Store(out + ow * channels + c + j * kLanes, Apply(acc[j], ops, nullptr, kLanes));
  }
}

[[gnu::always_inline]] inline void DepthwiseRow(const InvertedResidualShape& s, const Parts& p,
                                                const float* const* rows, const std::vector<PointwiseOp>& ops,
                                                float* out) {
  constexpr std::int64_t kC = 4;
  std::int64_t c = 0;
  for (; c + kC * kLanes <= p.expanded; c += kC * kLanes) DepthwiseChannels<kC>(s, p, rows, c, ops, out);
  switch ((p.expanded - c) / kLanes) {
    case 3: DepthwiseChannels<3>(s, p, rows, c, ops, out); break;
    case 2: DepthwiseChannels<2>(s, p, rows, c, ops, out); break;
    case 1: DepthwiseChannels<1>(s, p, rows, c, ops, out); break;
    default: break;
  }
}

// Rows (T - 1) * stride + kernel of the ring: every input row the depthwise
// window of T output rows reads.
std::int64_t RingRows(const InvertedResidualShape& s, std::int64_t tile_rows) {
  return (tile_rows - 1) * s.stride + s.kernel;
}

// Output rows [begin, end) of the block, T at a time, on one thread with its
// own ring and d-tile.
template <int kR, int kP>
[[gnu::always_inline]] inline void Band(const float* x, const Parts& p, float* y, const InvertedResidualShape& s,
                                        const InvertedResidualEpilogues& ep, std::int64_t tile_rows, float* ring,
                                        std::int64_t begin, std::int64_t end) {
  const std::int64_t ring_rows = RingRows(s, tile_rows), row_floats = s.in_w * p.expanded;
  float* tile = ring + ring_rows * row_floats;  // d: [tile_rows * out_w][expanded]
  const float* slot[16 * 8];                    // the depthwise rows of one output row (kernel <= 128)
  std::int64_t next = 0;                        // the first input row not expanded yet
  for (std::int64_t oh0 = begin; oh0 < end; oh0 += tile_rows) {
    const std::int64_t rows = std::min(tile_rows, end - oh0);
    const std::int64_t lo = std::max<std::int64_t>(0, oh0 * s.stride - s.pad_top);
    const std::int64_t hi = std::min(s.in_h, (oh0 + rows - 1) * s.stride - s.pad_top + s.kernel);
    // Expand input rows [max(lo, next), hi) into their ring slots (row % ring_rows), in runs that do not wrap.
    for (std::int64_t from = std::max(lo, next); from < hi;) {
      const std::int64_t at = from % ring_rows, count = std::min(hi - from, ring_rows - at);
      const Product g{x + from * s.in_w * s.in_channels,
                      s.in_channels,
                      s.in_channels,
                      p.expand,
                      p.expand_bias,
                      ring + at * row_floats,
                      p.expanded,
                      p.expanded,
                      &ep.expand,
                      nullptr,
                      0};
      Multiply<kR, kP>(g, count * s.in_w);
      from += count;
    }
    next = std::max(next, hi);
    for (std::int64_t oh = oh0; oh < oh0 + rows; ++oh) {
      for (std::int64_t kh = 0; kh < s.kernel; ++kh) {
        const std::int64_t ih = oh * s.stride - s.pad_top + kh;
        slot[kh] = ih >= 0 && ih < s.in_h ? ring + ih % ring_rows * row_floats : nullptr;
      }
      DepthwiseRow(s, p, slot, ep.depthwise, tile + (oh - oh0) * s.out_w * p.expanded);
    }
    const std::int64_t first = oh0 * s.out_w;
    const Product g{tile,
                    p.expanded,
                    p.expanded,
                    p.project,
                    p.project_bias,
                    y + first * s.out_channels,
                    s.out_channels,
                    s.out_channels,
                    &ep.project,
                    x + first * s.in_channels,
                    s.in_channels};
    Multiply<kR, kP>(g, rows * s.out_w);
  }
}

// Band built once per instruction set, with the register blocks of each:
// AVX-512, 12 rows x 2 panels (24 of 32 zmm registers); AVX2, 6 rows x 1
// panel (12 of 16 ymm); baseline SSE, 4 x 1 (16 xmm, some spilled).
using BandFn = void (*)(const float*, const Parts&, float*, const InvertedResidualShape&,
                        const InvertedResidualEpilogues&, std::int64_t, float*, std::int64_t, std::int64_t);
__attribute__((target("avx512f,fma"))) void BandAvx512(const float* x, const Parts& p, float* y,
                                                       const InvertedResidualShape& s,
                                                       const InvertedResidualEpilogues& ep, std::int64_t tile_rows,
                                                       float* ring, std::int64_t begin, std::int64_t end) {
  Band<12, 2>(x, p, y, s, ep, tile_rows, ring, begin, end);
}
__attribute__((target("avx2,fma"))) void BandAvx2(const float* x, const Parts& p, float* y,
                                                  const InvertedResidualShape& s, const InvertedResidualEpilogues& ep,
                                                  std::int64_t tile_rows, float* ring, std::int64_t begin,
                                                  std::int64_t end) {
  Band<6, 1>(x, p, y, s, ep, tile_rows, ring, begin, end);
}
void BandBaseline(const float* x, const Parts& p, float* y, const InvertedResidualShape& s,
                  const InvertedResidualEpilogues& ep, std::int64_t tile_rows, float* ring, std::int64_t begin,
                  std::int64_t end) {
  Band<4, 1>(x, p, y, s, ep, tile_rows, ring, begin, end);
}

bool HasAdd(const std::vector<PointwiseOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const PointwiseOp& o) { return o.kind == PointwiseOp::Kind::kAdd; });
}

}  // namespace

std::int64_t InvertedResidualPackedFloats(const InvertedResidualShape& s) {
  const std::int64_t e = Padded(s.expanded);
  return e * s.in_channels + e + s.kernel * s.kernel * e + e + Padded(s.out_channels) * e + Padded(s.out_channels);
}

void PackInvertedResidual(const InvertedResidualShape& s, const float* expand, const float* expand_bias,
                          const float* depthwise, const float* depthwise_bias, const float* project,
                          const float* project_bias, float* packed) {
  std::fill(packed, packed + InvertedResidualPackedFloats(s), 0.0f);
  const Parts p = PartsOf(s, packed);
  auto mut = [](const float* q) { return const_cast<float*>(q); };
  // Panels: column n of the product (an output channel) at [n / 16][k][n % 16].
  for (std::int64_t n = 0; n < s.expanded; ++n) {
    for (std::int64_t k = 0; k < s.in_channels; ++k)
      mut(p.expand)[(n / kLanes * s.in_channels + k) * kLanes + n % kLanes] = expand[n * s.in_channels + k];
    mut(p.expand_bias)[n] = expand_bias[n];
    for (std::int64_t t = 0; t < s.kernel * s.kernel; ++t)
      mut(p.depthwise)[t * p.expanded + n] = depthwise[n * s.kernel * s.kernel + t];
    mut(p.depthwise_bias)[n] = depthwise_bias[n];
  }
  for (std::int64_t n = 0; n < s.out_channels; ++n) {
    for (std::int64_t k = 0; k < s.expanded; ++k)
      mut(p.project)[(n / kLanes * p.expanded + k) * kLanes + n % kLanes] = project[n * s.expanded + k];
    mut(p.project_bias)[n] = project_bias[n];
  }
}

std::int64_t InvertedResidualScratchBytes(const InvertedResidualShape& s, std::int64_t tile_rows) {
  const std::int64_t floats = (RingRows(s, tile_rows) * s.in_w + tile_rows * s.out_w) * Padded(s.expanded);
  return (floats * static_cast<std::int64_t>(sizeof(float)) + 63) / 64 * 64;
}

std::int64_t InvertedResidualTileRows(const InvertedResidualShape& s, std::int64_t cache_bytes) {
  std::int64_t rows = 1;
  while (rows < s.out_h && InvertedResidualScratchBytes(s, rows + 1) <= cache_bytes / 2) ++rows;
  return rows;
}

void InvertedResidual(const float* x, const float* packed, float* y, const InvertedResidualShape& s,
                      const InvertedResidualEpilogues& ep, std::int64_t tile_rows, float* scratch,
                      std::int64_t scratch_bytes) {
  if (HasAdd(ep.expand) || HasAdd(ep.depthwise))
    throw std::logic_error("InvertedResidual: a residual Add is taken only after the projection");
  if (s.kernel > 128) throw std::logic_error("InvertedResidual: kernel " + std::to_string(s.kernel) + " > 128");
  const std::int64_t per_thread = InvertedResidualScratchBytes(s, tile_rows);
  if (scratch_bytes < per_thread)
    throw std::logic_error("InvertedResidual: " + std::to_string(scratch_bytes) + " bytes of scratch, a thread needs " +
                           std::to_string(per_thread));
  static const BandFn band = ForCpuIsa<BandFn>(BandAvx512, BandAvx2, BandBaseline);
  const Parts p = PartsOf(s, packed);
  // Bands of whole tiles, so that each thread's tiles are those of one thread.
  const std::int64_t tiles = (s.out_h + tile_rows - 1) / tile_rows;
  const int threads = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>({omp_get_max_threads(), scratch_bytes / per_thread, tiles})));
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const std::int64_t begin = tiles * t / n * tile_rows, end = std::min(s.out_h, tiles * (t + 1) / n * tile_rows);
    float* ring = reinterpret_cast<float*>(reinterpret_cast<char*>(scratch) + t * per_thread);
    if (begin < end) band(x, p, y, s, ep, tile_rows, ring, begin, end);
  }
}

std::int64_t L2CacheBytes() {
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : 1 << 20;
}

}  // namespace onnxfuse::backend
