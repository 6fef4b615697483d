#include "backend/kernels/pointwise.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/vector_math.h"

// GCC 12 warns inside its own avx512fintrin.h: the unmasked intrinsics pass
// _mm512_undefined_ps() as the (ignored) merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onnxfuse::backend {

namespace {

// Rows per register block for a panel of kV vectors: enough independent
// accumulators (rows x kV, at most 24 of the 32 registers) to cover the FMA
// latency, 4 cycles on two pipes: 8 in flight.
constexpr int RowsFor(int vectors) { return vectors <= 2 ? 12 : vectors == 3 ? 8 : 6; }
constexpr int kMaxRowsPerBlock = 12;

// Software prefetch of one weight panel, one cache line per k-step of the
// micro-kernel calls that compute the panel before it (a predictable branch
// in the inner loop; more lines than k-steps: the panel's tail stays cold).
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;  // next == end: nothing (left) to prefetch
};

struct Epilogue {
  const PointwiseOp* ops;
  std::size_t count;
  const float* addend;
};

template <int kR, int kV>
__attribute__((target("avx512f"), always_inline)) inline void Block(const float* x, std::int64_t k_total,
                                                                     const float* panel, const float* bias, float* y,
                                                                     std::int64_t ldy, const Epilogue& epilogue,
                                                                     std::int64_t addend_offset, Prefetch& prefetch) {
  __m512 acc[kR][kV];
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_loadu_ps(bias + 16 * v);
  const char* next = prefetch.next;
  for (std::int64_t k = 0; k < k_total; ++k) {
    __m512 w[kV];
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) w[v] = _mm512_loadu_ps(panel + k * kPointwisePanel + 16 * v);
    if (next < prefetch.end) {
      _mm_prefetch(next, _MM_HINT_T1);
      next += 64;
    }
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) {
      const __m512 xr = _mm512_set1_ps(x[r * k_total + k]);
#pragma GCC unroll 4
      for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(xr, w[v], acc[r][v]);
    }
  }
  prefetch.next = next;
  for (std::size_t i = 0; i < epilogue.count; ++i) {
    const PointwiseOp& op = epilogue.ops[i];
    const __m512 a = _mm512_set1_ps(op.a), b = _mm512_set1_ps(op.b), zero = _mm512_setzero_ps(),
                 one = _mm512_set1_ps(1.0f);
    switch (op.kind) {
      case PointwiseOp::Kind::kAdd:
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < kV; ++v)
            acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_loadu_ps(epilogue.addend + addend_offset + r * ldy + 16 * v));
        break;
      case PointwiseOp::Kind::kClamp:
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_min_ps(_mm512_max_ps(acc[r][v], a), b);
        break;
      case PointwiseOp::Kind::kLinear:
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(acc[r][v], a, b);
        break;
      case PointwiseOp::Kind::kHardSwish:
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < kV; ++v) {
            const __m512 gate = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(acc[r][v], a, b), zero), one);
            acc[r][v] = _mm512_mul_ps(acc[r][v], gate);
          }
        break;
      case PointwiseOp::Kind::kSwish:
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < kV; ++v) acc[r][v] = Swish16(acc[r][v]);
        break;
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) _mm512_storeu_ps(y + r * ldy + 16 * v, acc[r][v]);
}

// The last `left` rows of a panel (left < RowsFor(kV)), without prefetching.
template <int kV, int kR>
__attribute__((target("avx512f"))) void Tail(std::int64_t left, const float* x, std::int64_t k, const float* panel,
                                             const float* bias, float* y, std::int64_t ldy, const Epilogue& epilogue,
                                             std::int64_t addend_offset) {
  if constexpr (kR > 0) {
    if (left != kR) return Tail<kV, kR - 1>(left, x, k, panel, bias, y, ldy, epilogue, addend_offset);
    Prefetch none;
    Block<kR, kV>(x, k, panel, bias, y, ldy, epilogue, addend_offset, none);
  }
}

// Rows [begin, end) of one panel of kV x 16 output channels starting at `n0`.
template <int kV>
__attribute__((target("avx512f"))) void Panel(const float* x, const float* panel, const float* bias, float* y,
                                              const PointwiseShape& shape, std::int64_t n0, std::int64_t begin,
                                              std::int64_t end, const Epilogue& epilogue, Prefetch& prefetch) {
  constexpr int kR = RowsFor(kV);
  const std::int64_t k = shape.in_channels, ldy = shape.out_channels;
  std::int64_t m = begin;
  for (; m + kR <= end; m += kR)
    Block<kR, kV>(x + m * k, k, panel, bias + n0, y + m * ldy + n0, ldy, epilogue, m * ldy + n0, prefetch);
  if (m < end) Tail<kV, kR - 1>(end - m, x + m * k, k, panel, bias + n0, y + m * ldy + n0, ldy, epilogue, m * ldy + n0);
}

// Rows [begin, end) of every panel, prefetching each panel's successor (for
// the last, the next convolution's first).
void Rows(const float* x, const float* w, const float* bias, float* y, const PointwiseShape& shape,
          std::int64_t begin, std::int64_t end, const Epilogue& epilogue, const PointwiseNext& next) {
  const std::int64_t k = shape.in_channels, n = shape.out_channels;
  for (std::int64_t n0 = 0; n0 < n; n0 += kPointwisePanel) {
    const float* panel = w + n0 * k;  // each panel is k x 64 floats
    const int vectors = static_cast<int>(std::min<std::int64_t>(kPointwisePanel, n - n0) / 16);
    // The successor: the next panel, or for the last the next convolution's
    // first (panels are k-rows of 64 floats, 4 cache lines).
    Prefetch prefetch;
    if (n0 + kPointwisePanel < n) {
      prefetch.next = reinterpret_cast<const char*>(panel + k * kPointwisePanel);
      prefetch.end = prefetch.next + k * kPointwisePanel * static_cast<std::int64_t>(sizeof(float));
    } else if (next.weights != nullptr) {
      prefetch.next = reinterpret_cast<const char*>(next.weights);
      prefetch.end = prefetch.next + next.in_channels * kPointwisePanel * static_cast<std::int64_t>(sizeof(float));
    }
    switch (vectors) {
      case 4: Panel<4>(x, panel, bias, y, shape, n0, begin, end, epilogue, prefetch); break;
      case 3: Panel<3>(x, panel, bias, y, shape, n0, begin, end, epilogue, prefetch); break;
      case 2: Panel<2>(x, panel, bias, y, shape, n0, begin, end, epilogue, prefetch); break;
      default: Panel<1>(x, panel, bias, y, shape, n0, begin, end, epilogue, prefetch); break;
    }
  }
}

}  // namespace

bool HavePointwiseConv() { return CpuIsa() == Isa::kAvx512; }

void PointwiseConv(const float* x, const float* w, const float* bias, const float* addend, float* y,
                   const PointwiseShape& shape, const std::vector<PointwiseOp>& epilogue, const PointwiseNext& next) {
  const Epilogue ep{epilogue.data(), epilogue.size(), addend};
  const std::int64_t blocks = (shape.rows + kMaxRowsPerBlock - 1) / kMaxRowsPerBlock;
#pragma omp parallel if (blocks > 1)
  {
    // Each thread a contiguous range of row blocks, through every panel: the
    // weights are read once per thread, from its own L2 after the prefetch.
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t begin = std::min(shape.rows, blocks * t / threads * kMaxRowsPerBlock);
    const std::int64_t end = std::min(shape.rows, blocks * (t + 1) / threads * kMaxRowsPerBlock);
    if (begin < end) Rows(x, w, bias, y, shape, begin, end, ep, next);
  }
}

}  // namespace onnxfuse::backend
