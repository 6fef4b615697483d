#include "gemm_kernel.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "cpu_isa.h"

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
  const float* bias = nullptr;    // at the tile's first column
  const float* addend = nullptr;  // at the tile's first element; row stride ldc
  const PointwiseOp* ops = nullptr;
  std::size_t op_count = 0;
  bool first = false, last = false;
};

// R rows x 16 columns of c (row stride ldc) += packed rows [kc][6] x panel
// slice [kc][16].
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void Micro(const float* rows, const float* panel,
                                                                   std::int64_t kc, float* c, std::int64_t ldc,
                                                                   const Tile& tile) {
  // Every loop over the accumulators fully unrolled: indexed by a variable,
  // the array would live in memory, not in registers.
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      if (!tile.first) {
        acc[r][v] = _mm256_loadu_ps(c + r * ldc + 8 * v);
      } else {
        acc[r][v] = tile.bias ? _mm256_loadu_ps(tile.bias + 8 * v) : _mm256_setzero_ps();
        if (tile.addend) acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_loadu_ps(tile.addend + r * ldc + 8 * v));
      }
    }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + k * kGemmPanel), w1 = _mm256_loadu_ps(panel + k * kGemmPanel + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(rows + k * kMicroRows + r);
      acc[r][0] = _mm256_fmadd_ps(x, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, w1, acc[r][1]);
    }
  }
  for (std::size_t i = 0; tile.last && i < tile.op_count; ++i) {
    const PointwiseOp& op = tile.ops[i];
    const __m256 a = _mm256_set1_ps(op.a), b = _mm256_set1_ps(op.b), zero = _mm256_setzero_ps(),
                 one = _mm256_set1_ps(1.0f);
    switch (op.kind) {
      case PointwiseOp::Kind::kClamp:
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) acc[r][v] = _mm256_min_ps(_mm256_max_ps(acc[r][v], a), b);
        break;
      case PointwiseOp::Kind::kLinear:
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) acc[r][v] = _mm256_fmadd_ps(acc[r][v], a, b);
        break;
      case PointwiseOp::Kind::kHardSwish:
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v)
            acc[r][v] = _mm256_mul_ps(acc[r][v], _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(acc[r][v], a, b), zero), one));
        break;
      case PointwiseOp::Kind::kAdd: break;  // taken at the first block
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

__attribute__((target("avx2,fma"))) void MicroRows(int rows, const float* packed, const float* panel, std::int64_t kc,
                                                  float* c, std::int64_t ldc, const Tile& tile) {
  switch (rows) {
    case 6: Micro<6>(packed, panel, kc, c, ldc, tile); break;
    case 5: Micro<5>(packed, panel, kc, c, ldc, tile); break;
    case 4: Micro<4>(packed, panel, kc, c, ldc, tile); break;
    case 3: Micro<3>(packed, panel, kc, c, ldc, tile); break;
    case 2: Micro<2>(packed, panel, kc, c, ldc, tile); break;
    default: Micro<1>(packed, panel, kc, c, ldc, tile); break;
  }
}

// Rows [m0, m0 + mc) x depth [k0, k0 + kc) of a as [ceil(mc / 6)][kc][6]
// (the last group's missing rows repeat its last row: read, never stored).
void PackRows(const float* a, std::int64_t depth, std::int64_t m0, std::int64_t mc, std::int64_t k0,
              std::int64_t kc, float* packed) {
  for (std::int64_t g = 0; g * kMicroRows < mc; ++g)
    for (std::int64_t r = 0; r < kMicroRows; ++r) {
      const float* src = a + (m0 + std::min(g * kMicroRows + r, mc - 1)) * depth + k0;
      float* dst = packed + g * kc * kMicroRows + r;
      for (std::int64_t k = 0; k < kc; ++k) dst[k * kMicroRows] = src[k];
    }
}

// Columns [n_begin, n_end) (whole panels) of c, all rows.
void Columns(const float* a, const float* w, const float* bias, const float* addend, float* c, const GemmShape& s,
             const std::vector<PointwiseOp>& epilogue, std::int64_t n_begin, std::int64_t n_end) {
  thread_local std::vector<float> packed;  // grows once per thread: no allocation per call
  const std::int64_t blocks = (s.depth + kMaxDepthBlock - 1) / kMaxDepthBlock;
  const std::int64_t kc_max = (s.depth + blocks - 1) / blocks;
  packed.resize(static_cast<std::size_t>((kBlockRows + kMicroRows - 1) / kMicroRows * kMicroRows * kc_max));
  const bool add_first = !epilogue.empty() && epilogue[0].kind == PointwiseOp::Kind::kAdd;
  for (std::int64_t k0 = 0; k0 < s.depth; k0 += kc_max) {
    const std::int64_t kc = std::min(kc_max, s.depth - k0);
    for (std::int64_t m0 = 0; m0 < s.rows; m0 += kBlockRows) {
      const std::int64_t mc = std::min(kBlockRows, s.rows - m0);
      PackRows(a, s.depth, m0, mc, k0, kc, packed.data());
      for (std::int64_t n0 = n_begin; n0 < n_end; n0 += kGemmPanel) {
        const float* panel = w + n0 * s.depth + k0 * kGemmPanel;
        for (std::int64_t m = 0; m < mc; m += kMicroRows) {
          const std::int64_t row = m0 + m;
          Tile tile;
          tile.first = k0 == 0, tile.last = k0 + kc == s.depth;
          tile.bias = bias ? bias + n0 : nullptr;
          tile.addend = add_first ? addend + row * s.cols + n0 : nullptr;
          tile.ops = epilogue.data() + (add_first ? 1 : 0);
          tile.op_count = epilogue.size() - (add_first ? 1 : 0);
          MicroRows(static_cast<int>(std::min<std::int64_t>(kMicroRows, mc - m)), packed.data() + m * kc, panel, kc,
                    c + row * s.cols + n0, s.cols, tile);
        }
      }
    }
  }
}

}  // namespace

bool HaveGemm() { return CpuIsa() == Isa::kAvx2; }

void Gemm(const float* a, const float* w, const float* bias, const float* addend, float* c, const GemmShape& shape,
          const std::vector<PointwiseOp>& epilogue) {
  const std::int64_t panels = shape.cols / kGemmPanel;
#pragma omp parallel if (panels > 1 && shape.rows * shape.depth * shape.cols > (1 << 18))
  {
    // Each thread a contiguous range of column panels: its share of the
    // weights, read once; every thread packs the rows itself.
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t begin = panels * t / threads * kGemmPanel, end = panels * (t + 1) / threads * kGemmPanel;
    if (begin < end) Columns(a, w, bias, addend, c, shape, epilogue, begin, end);
  }
}

}  // namespace onnxfuse::backend
