#include "backend/kernels/lstm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "backend/kernels/activation.h"
#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

// g[c] = p[c] + sum_k h[k] rt[k * cols + c] for c < cols: the product with R
// as a sum of R^T's rows scaled by h, in blocks of columns whose sums stay in
// registers for the whole depth (eight vectors: enough in flight to cover
// the FMA latency), each row of the block read once from L2.
using GatesFn = void (*)(const float* rt, const float* h, const float* p, float* g, std::int64_t depth,
                         std::int64_t cols);

void GatesScalar(const float* rt, const float* h, const float* p, float* g, std::int64_t depth, std::int64_t cols) {
  std::copy(p, p + cols, g);
  for (std::int64_t k = 0; k < depth; ++k)
    for (std::int64_t c = 0; c < cols; ++c) g[c] += h[k] * rt[k * cols + c];
}

__attribute__((target("avx512f"))) void GatesAvx512(const float* rt, const float* h, const float* p, float* g,
                                                    std::int64_t depth, std::int64_t cols) {
  constexpr int kRegs = 8;
  std::int64_t c0 = 0;
  for (; c0 + 16 * kRegs <= cols; c0 += 16 * kRegs) {
    __m512 acc[kRegs];
    for (int r = 0; r < kRegs; ++r) acc[r] = _mm512_loadu_ps(p + c0 + 16 * r);
    for (std::int64_t k = 0; k < depth; ++k) {
      const __m512 hk = _mm512_set1_ps(h[k]);
      const float* row = rt + k * cols + c0;
      for (int r = 0; r < kRegs; ++r) acc[r] = _mm512_fmadd_ps(hk, _mm512_loadu_ps(row + 16 * r), acc[r]);
    }
    for (int r = 0; r < kRegs; ++r) _mm512_storeu_ps(g + c0 + 16 * r, acc[r]);
  }
  for (; c0 < cols; c0 += 16) {  // the last columns, one masked vector at a time
    const auto mask = static_cast<__mmask16>(cols - c0 >= 16 ? 0xffff : (1u << (cols - c0)) - 1);
    __m512 acc = _mm512_maskz_loadu_ps(mask, p + c0);
    for (std::int64_t k = 0; k < depth; ++k)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(h[k]), _mm512_maskz_loadu_ps(mask, rt + k * cols + c0), acc);
    _mm512_mask_storeu_ps(g + c0, mask, acc);
  }
}

__attribute__((target("avx2,fma"))) void GatesAvx2(const float* rt, const float* h, const float* p, float* g,
                                                   std::int64_t depth, std::int64_t cols) {
  constexpr int kRegs = 8;
  std::int64_t c0 = 0;
  for (; c0 + 8 * kRegs <= cols; c0 += 8 * kRegs) {
    __m256 acc[kRegs];
    for (int r = 0; r < kRegs; ++r) acc[r] = _mm256_loadu_ps(p + c0 + 8 * r);
    for (std::int64_t k = 0; k < depth; ++k) {
      const __m256 hk = _mm256_set1_ps(h[k]);
      const float* row = rt + k * cols + c0;
      for (int r = 0; r < kRegs; ++r) acc[r] = _mm256_fmadd_ps(hk, _mm256_loadu_ps(row + 8 * r), acc[r]);
    }
    for (int r = 0; r < kRegs; ++r) _mm256_storeu_ps(g + c0 + 8 * r, acc[r]);
  }
  for (; c0 < cols; ++c0) {  // the last columns
    float sum = p[c0];
    for (std::int64_t k = 0; k < depth; ++k) sum += h[k] * rt[k * cols + c0];
    g[c0] = sum;
  }
}

// One direction over all steps: its states [N, H] and one row's gates [4H] in `scratch`.
void RunDirection(const LstmShape& s, std::int64_t d, const float* projection, const float* rt, const float* peephole,
                  const float* h0, const float* c0, float* y, float* y_h, float* y_c, float* scratch) {
  const std::int64_t n_rows = s.batch, hidden = s.hidden, gates = 4 * hidden, dirs = s.directions;
  float* g = scratch;
  float* h = g + gates;
  float* c = h + n_rows * hidden;
  const std::int64_t state = d * n_rows * hidden;  // this direction's [N, H] in h0, c0, y_h, y_c
  if (h0)
    std::copy(h0 + state, h0 + state + n_rows * hidden, h);
  else
    std::fill(h, h + n_rows * hidden, 0.f);
  if (c0)
    std::copy(c0 + state, c0 + state + n_rows * hidden, c);
  else
    std::fill(c, c + n_rows * hidden, 0.f);
  static const GatesFn product = ForCpuIsa<GatesFn>(GatesAvx512, GatesAvx2, GatesScalar);
  const float* rd = rt + d * hidden * gates;
  const float* pd = peephole ? peephole + d * 3 * hidden : nullptr;
  const bool reverse = d == 1 || s.reverse;
  for (std::int64_t step = 0; step < s.steps; ++step) {
    const std::int64_t t = reverse ? s.steps - 1 - step : step;
    for (std::int64_t n = 0; n < n_rows; ++n) {
      float* hn = h + n * hidden;
      float* cn = c + n * hidden;
      // g = P[t, n, d] + R h; ONNX gate blocks i, o, f, c.
      product(rd, hn, projection + ((t * n_rows + n) * dirs + d) * gates, g, hidden, gates);
      float *gi = g, *go = g + hidden, *gf = g + 2 * hidden, *gc = g + 3 * hidden;
      if (pd)
        for (std::int64_t j = 0; j < hidden; ++j) {
          gi[j] += pd[j] * cn[j];
          gf[j] += pd[2 * hidden + j] * cn[j];
        }
      Sigmoid(gi, gi, hidden);
      Sigmoid(gf, gf, hidden);
      Tanh(gc, gc, hidden);
      for (std::int64_t j = 0; j < hidden; ++j) cn[j] = gf[j] * cn[j] + gi[j] * gc[j];
      if (pd)
        for (std::int64_t j = 0; j < hidden; ++j) go[j] += pd[hidden + j] * cn[j];
      Sigmoid(go, go, hidden);
      Tanh(cn, gc, hidden);  // gc is free again: tanh(c)
      for (std::int64_t j = 0; j < hidden; ++j) hn[j] = go[j] * gc[j];
      if (y) std::copy(hn, hn + hidden, y + ((t * dirs + d) * n_rows + n) * hidden);
    }
  }
  if (y_h) std::copy(h, h + n_rows * hidden, y_h + state);
  if (y_c) std::copy(c, c + n_rows * hidden, y_c + state);
}

std::int64_t DirectionScratch(const LstmShape& s) { return 4 * s.hidden + 2 * s.batch * s.hidden; }

}  // namespace

std::int64_t LstmScratchFloats(const LstmShape& shape) { return shape.directions * DirectionScratch(shape); }

void LstmRecurrence(const LstmShape& shape, const float* projection, const float* rt, const float* peephole,
                    const float* h0, const float* c0, float* y, float* y_h, float* y_c, float* scratch) {
  const int threads = static_cast<int>(std::min<std::int64_t>(shape.directions, omp_get_max_threads()));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (std::int64_t d = 0; d < shape.directions; ++d) {
    RunDirection(shape, d, projection, rt, peephole, h0, c0, y, y_h, y_c, scratch + d * DirectionScratch(shape));
  }
}

}  // namespace onnxfuse::backend
