#include "backend/kernels/inverted_residual.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/vector_math.h"

// The vector code is internal to this file, so the ABI of passing a 64-byte
// vector by value, which GCC warns about, is ours alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 warns inside its own avx512fintrin.h (vector_math.h's exp): the
// unmasked intrinsics pass _mm512_undefined_ps() as the (ignored) merge source.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onnxfuse::backend {

namespace {

// Channels per vector and per weight panel.
constexpr std::int64_t kLanes = 16;

std::int64_t Padded(std::int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// The packed buffer's parts: F is const float where the kernel reads them,
// float where PackInvertedResidual writes them.
template <typename F>
struct PartsT {
  std::int64_t expanded;  // padded to kLanes
  F *expand, *expand_bias, *depthwise, *depthwise_bias, *project, *project_bias;
};
using Parts = PartsT<const float>;

template <typename F>
PartsT<F> PartsOf(const InvertedResidualShape& s, F* packed) {
  PartsT<F> p;
  p.expanded = Padded(s.expanded);
  p.expand = packed;
  p.expand_bias = p.expand + p.expanded * s.in_channels;
  p.depthwise = p.expand_bias + p.expanded;
  p.depthwise_bias = p.depthwise + s.kernel * s.kernel * p.expanded;
  p.project = p.depthwise_bias + p.expanded;
  p.project_bias = p.project + Padded(s.out_channels) * p.expanded;
  return p;
}

// The largest kernel: Band keeps a pointer per kernel row on its stack.
constexpr std::int64_t kMaxKernel = 128;

// Rows (T - 1) * stride + kernel of the ring: every input row the depthwise
// window of T output rows reads.
std::int64_t RingRows(const InvertedResidualShape& s, std::int64_t tile_rows) {
  return (tile_rows - 1) * s.stride + s.kernel;
}

// The vector code, built once per instruction set (ForCpuIsa chooses), with
// the register blocks of each: AVX-512, 12 rows x 2 panels (24 of its 32 zmm
// registers); AVX2, 6 rows x 1 panel (12 of 16 ymm); baseline SSE, 4 x 1.
// clang (the fuzz builds) has no `#pragma GCC target`: all three are baseline there.
#if defined(__clang__)
#define ONNXFUSE_TARGET_REGION(isa)
#define ONNXFUSE_TARGET_REGION_END
#define ONNXFUSE_VECTOR_BITS(bits) 0
#else
#define ONNXFUSE_VECTOR_BITS(bits) bits
#define ONNXFUSE_TARGET_REGION(isa) _Pragma("GCC push_options") _Pragma(isa)
#define ONNXFUSE_TARGET_REGION_END _Pragma("GCC pop_options")
#endif

ONNXFUSE_TARGET_REGION("GCC target(\"avx512f,fma\")")
namespace avx512 {
constexpr int kRows = 12, kPanels = 2, kVectorBits = ONNXFUSE_VECTOR_BITS(512);
#include "backend/kernels/inverted_residual_band.inc"
}  // namespace avx512
ONNXFUSE_TARGET_REGION_END

ONNXFUSE_TARGET_REGION("GCC target(\"avx2,fma\")")
namespace avx2 {
constexpr int kRows = 6, kPanels = 1, kVectorBits = ONNXFUSE_VECTOR_BITS(256);
#include "backend/kernels/inverted_residual_band.inc"
}  // namespace avx2
ONNXFUSE_TARGET_REGION_END

namespace baseline {
constexpr int kRows = 4, kPanels = 1, kVectorBits = 0;
#include "backend/kernels/inverted_residual_band.inc"
}  // namespace baseline

using BandFn = void (*)(const float*, const Parts&, float*, const InvertedResidualShape&,
                        const InvertedResidualEpilogues&, std::int64_t, float*, std::int64_t, std::int64_t, float*);

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
  const PartsT<float> p = PartsOf(s, packed);
  // Panels: column n of the product (an output channel) at [n / 16][k][n % 16].
  for (std::int64_t n = 0; n < s.expanded; ++n) {
    for (std::int64_t k = 0; k < s.in_channels; ++k)
      p.expand[(n / kLanes * s.in_channels + k) * kLanes + n % kLanes] = expand[n * s.in_channels + k];
    p.expand_bias[n] = expand_bias[n];
    for (std::int64_t t = 0; t < s.kernel * s.kernel; ++t)
      p.depthwise[t * p.expanded + n] = depthwise[n * s.kernel * s.kernel + t];
    p.depthwise_bias[n] = depthwise_bias[n];
  }
  for (std::int64_t n = 0; n < s.out_channels; ++n) {
    for (std::int64_t k = 0; k < s.expanded; ++k)
      p.project[(n / kLanes * p.expanded + k) * kLanes + n % kLanes] = project[n * s.expanded + k];
    p.project_bias[n] = project_bias[n];
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
                      std::int64_t scratch_bytes, float* means) {
  if (HasAdd(ep.expand) || HasAdd(ep.depthwise) || (s.out_channels == 0 && HasAdd(ep.project)))
    throw std::logic_error("InvertedResidual: a residual Add is taken only after the projection");
  if (means && s.out_channels > 0) throw std::logic_error("InvertedResidual: channel means of d are taken without a projection");
  if (s.kernel > kMaxKernel)
    throw std::logic_error("InvertedResidual: kernel " + std::to_string(s.kernel) + " > " + std::to_string(kMaxKernel));
  const std::int64_t per_thread = InvertedResidualScratchBytes(s, tile_rows);
  if (scratch_bytes < per_thread)
    throw std::logic_error("InvertedResidual: " + std::to_string(scratch_bytes) + " bytes of scratch, a thread needs " +
                           std::to_string(per_thread));
  static const BandFn band = ForCpuIsa<BandFn>(avx512::Band, avx2::Band, baseline::Band);
  const Parts p = PartsOf(s, packed);
  // Each row's channel sums of d, [out_h][expanded padded]: kept across
  // calls (this runs once per block of a network), summed in row order below.
  thread_local std::vector<float> row_sums;
  if (means) row_sums.resize(static_cast<std::size_t>(s.out_h * p.expanded));
  float* sums = means ? row_sums.data() : nullptr;
  // Bands of near-equal numbers of output rows, one per thread, each walked T
  // rows at a time: a map of a few tiles keeps both threads busy.
  const int threads = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>({omp_get_max_threads(), scratch_bytes / per_thread, s.out_h})));
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const std::int64_t begin = s.out_h * t / n, end = s.out_h * (t + 1) / n;
    float* ring = reinterpret_cast<float*>(reinterpret_cast<char*>(scratch) + t * per_thread);
    if (begin < end) band(x, p, y, s, ep, tile_rows, ring, begin, end, sums);
  }
  if (!means) return;
  for (std::int64_t c = 0; c < s.expanded; ++c) {
    float total = 0;
    for (std::int64_t oh = 0; oh < s.out_h; ++oh) total += sums[oh * p.expanded + c];
    means[c] = total / static_cast<float>(s.out_h * s.out_w);
  }
}

std::int64_t L2CacheBytes() {
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : 1 << 20;
}

}  // namespace onnxfuse::backend
