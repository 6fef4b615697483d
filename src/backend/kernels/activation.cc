#include "backend/kernels/activation.h"

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/in_chunks.h"
#include "backend/kernels/vector_math.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

// GCC 12 warns inside its own avx512fintrin.h: the unmasked intrinsics pass
// _mm512_undefined_ps() as the (ignored) merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onnxfuse::backend {

namespace {

// Abramowitz & Stegun 7.1.26: erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2),
// t = 1 / (1 + p z), z >= 0.
constexpr float kP = 0.3275911f, kA1 = 0.254829592f, kA2 = -0.284496736f, kA3 = 1.421413741f,
                kA4 = -1.453152027f, kA5 = 1.061405429f;
constexpr float kSqrtHalf = 0.707106781186547524f;
// tanh x = x + x^3 (kT3 + x^2 (kT5 + x^2 (kT7 + x^2 kT9))) + O(x^11) (the
// series' coefficients: -1/3, 2/15, -17/315, 62/2835), used below kTanhSmall.
constexpr float kT3 = -1.f / 3, kT5 = 2.f / 15, kT7 = -17.f / 315, kT9 = 62.f / 2835;
constexpr float kTanhSmall = 0.25f;

using Kernel = void (*)(const float* src, float* dst, std::int64_t n);

void SwishScalar(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.f + std::exp(-x[i]));
}

void GeluScalar(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * kSqrtHalf));
}

void SigmoidScalar(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
}

void TanhScalar(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

// --- AVX-512 ---------------------------------------------------------------

// x where x is NaN, else y: Exp2_16's clamp (max with -200) turns NaN into a number.
__attribute__((target("avx512f"))) __m512 KeepNaN16(__m512 x, __m512 y) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

__attribute__((target("avx512f"))) __m512 Sigmoid16(__m512 x) {
  __m512 e = Exp2_16(_mm512_mul_ps(x, _mm512_set1_ps(-kLog2e)));  // exp(-x)
  return KeepNaN16(x, _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_add_ps(e, _mm512_set1_ps(1.f))));
}

// |x| < kTanhSmall: the odd Taylor series to x^9 (the next term, 1382/155925
// x^11, is below 1e-8 of tanh there); beyond: 1 - 2 / (1 + exp(2x)), which
// near 0 would keep exp's error as an absolute one (relative error below
// 5e-7 from 0.25 on). exp(2x) = infinity gives 1, exp(2x) = 0 gives -1.
__attribute__((target("avx512f"))) __m512 Tanh16(__m512 x) {
  __m512 e = Exp2_16(_mm512_mul_ps(x, _mm512_set1_ps(2.f * kLog2e)));
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 large = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.f), _mm512_add_ps(e, one)));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kT9), x2, _mm512_set1_ps(kT7));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(kT5));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(kT3));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, x2), x, x);
  const __mmask16 is_small = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
  return KeepNaN16(x, _mm512_mask_blend_ps(is_small, large, small));
}

__attribute__((target("avx512f"))) __m512 Gelu16(__m512 x) {
  __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(kSqrtHalf));
  __m512 t = _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_fmadd_ps(z, _mm512_set1_ps(kP), _mm512_set1_ps(1.f)));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kA5), t, _mm512_set1_ps(kA4));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kA3));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kA2));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kA1));
  p = _mm512_mul_ps(p, t);
  __m512 erfc = _mm512_mul_ps(p, Exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z)));
  // h = x erfc(|x|/sqrt2) / 2: Gelu is h for x < 0 and x - h for x >= 0.
  __m512 h = _mm512_mul_ps(_mm512_mul_ps(x, erfc), _mm512_set1_ps(0.5f));
  __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(negative, _mm512_sub_ps(x, h), h);
}

template <__m512 (*F)(__m512)>
__attribute__((target("avx512f"))) void Avx512(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i)));
  if (i < n) {
    auto mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, mask, F(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

// --- AVX2 + FMA --------------------------------------------------------------

// x where x is NaN, else y: Exp8's clamp turns NaN into a number.
__attribute__((target("avx2,fma"))) __m256 KeepNaN8(__m256 x, __m256 y) {
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

__attribute__((target("avx2,fma"))) __m256 Sigmoid8(__m256 x) {
  __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return KeepNaN8(x, _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_add_ps(e, _mm256_set1_ps(1.f))));
}

// As Tanh16. Exp8 clamps its exponent to +-126: 2 / (1 + 2^126) is 0 in
// float, so the ends are still exactly 1 and -1.
__attribute__((target("avx2,fma"))) __m256 Tanh8(__m256 x) {
  __m256 e = Exp8(_mm256_add_ps(x, x));
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kT9), x2, _mm256_set1_ps(kT7));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kT5));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kT3));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
  const __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.f), x);
  const __m256 is_small = _mm256_cmp_ps(abs, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ);
  return KeepNaN8(x, _mm256_blendv_ps(large, small, is_small));
}

__attribute__((target("avx2,fma"))) __m256 Gelu8(__m256 x) {
  __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.f), x);
  __m256 z = _mm256_mul_ps(abs, _mm256_set1_ps(kSqrtHalf));
  __m256 t = _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_fmadd_ps(z, _mm256_set1_ps(kP), _mm256_set1_ps(1.f)));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kA5), t, _mm256_set1_ps(kA4));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kA3));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kA2));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kA1));
  p = _mm256_mul_ps(p, t);
  __m256 erfc = _mm256_mul_ps(p, Exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), z), z)));
  __m256 h = _mm256_mul_ps(_mm256_mul_ps(x, erfc), _mm256_set1_ps(0.5f));
  __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(_mm256_sub_ps(x, h), h, negative);
}

// The tail through the same vector formula (masked), as the AVX-512 path
// does: equal inputs give equal outputs wherever they lie, so a later ArgMax
// or TopK over equal values sees the tie it should.
template <__m256 (*F)(__m256)>
__attribute__((target("avx2,fma"))) void Avx2(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, mask, F(_mm256_maskload_ps(x + i, mask)));
  }
}

// --- dispatch ----------------------------------------------------------------

void Apply(Kernel kernel, const float* src, float* dst, std::int64_t count) {
  constexpr std::int64_t kChunk = 4096;  // floats per task: 16 KiB
  InChunks(count, kChunk, [&](std::int64_t begin, std::int64_t n) { kernel(src + begin, dst + begin, n); });
}

// sums[c] += rows of x [rows, channels], c < channels. Four rows per update of
// `sums`: one load-add-store chain through memory per row would bound it.
[[gnu::always_inline]] inline void AddRows(const float* x, std::int64_t rows, std::int64_t channels, float* sums) {
  std::int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *x0 = x + r * channels, *x1 = x0 + channels, *x2 = x1 + channels, *x3 = x2 + channels;
    for (std::int64_t c = 0; c < channels; ++c) sums[c] += (x0[c] + x1[c]) + (x2[c] + x3[c]);
  }
  for (; r < rows; ++r)
    for (std::int64_t c = 0; c < channels; ++c) sums[c] += x[r * channels + c];
}

// sums[l] += the sum over `rows` of x [rows, kLanes] (one 8- or 16-channel
// block), four rows in flight, the partial sums in registers: AddRows's
// load-add-store of `sums` per four rows halves the rate here.
template <int kLanes>
__attribute__((always_inline)) inline void SumRows(const float* x, std::int64_t rows, float* sums) {
  float a[4][kLanes] = {};
  std::int64_t r = 0;
  for (; r + 4 <= rows; r += 4, x += 4 * kLanes)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < kLanes; ++l) a[k][l] += x[k * kLanes + l];
  for (; r < rows; ++r, x += kLanes)
    for (int l = 0; l < kLanes; ++l) a[0][l] += x[l];
  for (int l = 0; l < kLanes; ++l) sums[l] += (a[0][l] + a[1][l]) + (a[2][l] + a[3][l]);
}

// AddRows for one block of `lanes` channels: SumRows when 8 or 16. Built once
// per instruction set, so GCC vectorizes the sums for each (ForCpuIsa chooses).
[[gnu::always_inline]] inline void AddBlockRowsAnyLanes(const float* x, std::int64_t rows, std::int64_t lanes,
                                                        float* sums) {
  if (lanes == 8) SumRows<8>(x, rows, sums);
  else if (lanes == 16) SumRows<16>(x, rows, sums);
  else AddRows(x, rows, lanes, sums);
}
using AddBlockRowsFn = void (*)(const float*, std::int64_t, std::int64_t, float*);
__attribute__((target("avx512f"))) void AddBlockRowsAvx512(const float* x, std::int64_t rows, std::int64_t lanes,
                                                          float* sums) {
  AddBlockRowsAnyLanes(x, rows, lanes, sums);
}
__attribute__((target("avx2"))) void AddBlockRowsAvx2(const float* x, std::int64_t rows, std::int64_t lanes,
                                                      float* sums) {
  AddBlockRowsAnyLanes(x, rows, lanes, sums);
}
void AddBlockRowsBaseline(const float* x, std::int64_t rows, std::int64_t lanes, float* sums) {
  AddBlockRowsAnyLanes(x, rows, lanes, sums);
}
void AddBlockRows(const float* x, std::int64_t rows, std::int64_t lanes, float* sums) {
  static const AddBlockRowsFn add = ForCpuIsa<AddBlockRowsFn>(AddBlockRowsAvx512, AddBlockRowsAvx2, AddBlockRowsBaseline);
  add(x, rows, lanes, sums);
}

Kernel SwishKernel() {
  static const Kernel kernel = CpuIsa() == Isa::kAvx512 ? Avx512<Swish16>
                               : CpuIsa() == Isa::kAvx2 ? Avx2<Swish8>
                                                        : SwishScalar;
  return kernel;
}

}  // namespace

void SwishInPlaceWithMeans(float* data, std::int64_t blocks, std::int64_t rows, std::int64_t block,
                           std::int64_t channels, float* means) {
  const Kernel kernel = SwishKernel();
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, 4096 / block);  // about 16 KiB: stays in L1
  const std::int64_t chunks_per_block = (rows + rows_per_chunk - 1) / rows_per_chunk, chunks = blocks * chunks_per_block;
  std::vector<float> total(static_cast<std::size_t>(blocks * block), 0.f);
#pragma omp parallel if (chunks > 1)
  {
    std::vector<float> sums(total.size(), 0.f);
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < chunks; ++k) {
      const std::int64_t b = k / chunks_per_block, first = (k % chunks_per_block) * rows_per_chunk;
      const std::int64_t n = std::min(rows_per_chunk, rows - first);
      float* x = data + (b * rows + first) * block;
      kernel(x, x, n * block);
      AddBlockRows(x, n, block, sums.data() + b * block);
    }
#pragma omp critical
    for (std::size_t c = 0; c < total.size(); ++c) total[c] += sums[c];
  }
  for (std::int64_t c = 0; c < channels; ++c) means[c] = total[static_cast<std::size_t>(c)] / static_cast<float>(rows);
}

void ChannelMeans(const float* data, std::int64_t images, std::int64_t blocks, std::int64_t rows, std::int64_t block,
                  std::int64_t channels, float* means) {
  thread_local std::vector<float> total;  // kept across calls: this runs once per block of a network
  total.resize(static_cast<std::size_t>(blocks * block));
  // The calling thread's buffer: inside the parallel region `total` would name each thread's own.
  float* sums = total.data();
  for (std::int64_t n = 0; n < images; ++n) {
    const float* image = data + n * blocks * rows * block;
    std::fill(sums, sums + blocks * block, 0.f);
#pragma omp parallel for schedule(static) if (blocks > 1 && blocks * rows * block >= (1 << 16))
    for (std::int64_t b = 0; b < blocks; ++b) AddBlockRows(image + b * rows * block, rows, block, sums + b * block);
    for (std::int64_t c = 0; c < channels; ++c) means[n * channels + c] = sums[c] / static_cast<float>(rows);
  }
}

void SwishInPlace(float* data, std::int64_t count) {
  Apply(SwishKernel(), data, data, count);
}

void Gelu(const float* src, float* dst, std::int64_t count) {
  static const Kernel kernel = CpuIsa() == Isa::kAvx512 ? Avx512<Gelu16>
                               : CpuIsa() == Isa::kAvx2 ? Avx2<Gelu8>
                                                        : GeluScalar;
  Apply(kernel, src, dst, count);
}

void Sigmoid(const float* src, float* dst, std::int64_t count) {
  static const Kernel kernel = CpuIsa() == Isa::kAvx512 ? Avx512<Sigmoid16>
                               : CpuIsa() == Isa::kAvx2 ? Avx2<Sigmoid8>
                                                        : SigmoidScalar;
  kernel(src, dst, count);
}

void Tanh(const float* src, float* dst, std::int64_t count) {
  static const Kernel kernel = CpuIsa() == Isa::kAvx512 ? Avx512<Tanh16>
                               : CpuIsa() == Isa::kAvx2 ? Avx2<Tanh8>
                                                        : TanhScalar;
  kernel(src, dst, count);
}

}  // namespace onnxfuse::backend
