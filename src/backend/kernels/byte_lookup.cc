#include "backend/kernels/byte_lookup.h"

#include <immintrin.h>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/in_chunks.h"

namespace onnxfuse::backend {

namespace {

void LookupBaseline(const std::uint8_t* table, const std::uint8_t* in, std::uint8_t* out, std::int64_t n) {
  std::uint8_t local[256];  // on the stack: stores through `out` cannot alias it
  for (int i = 0; i < 256; ++i) local[i] = table[i];
  for (std::int64_t i = 0; i < n; ++i) out[i] = local[in[i]];
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void LookupVbmi(const std::uint8_t* table,
                                                                        const std::uint8_t* in, std::uint8_t* out,
                                                                        std::int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64),
                t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i index = _mm512_loadu_si512(in + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, index, t1);   // entries 0-127 by the low 7 bits
    const __m512i high = _mm512_permutex2var_epi8(t2, index, t3);  // entries 128-255
    _mm512_storeu_si512(out + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high));
  }
  LookupBaseline(table, in + i, out + i, n - i);
}

// 32 bytes at a time: pshufb looks up 16 entries by an index's low nibble, so
// each of the 16 rows of the table (one high nibble) is looked up for every
// byte and kept where the byte's high nibble is that row's.
__attribute__((target("avx2"))) void LookupAvx2(const std::uint8_t* table, const std::uint8_t* in, std::uint8_t* out,
                                                std::int64_t n) {
  __m256i rows[16];
  for (int r = 0; r < 16; ++r)
    rows[r] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  const __m256i low_nibble = _mm256_set1_epi8(0x0F);
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i low = _mm256_and_si256(index, low_nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(index, 4), low_nibble);
    __m256i result = _mm256_setzero_si256();
    for (int r = 0; r < 16; ++r) {
      const __m256i row = _mm256_cmpeq_epi8(high, _mm256_set1_epi8(static_cast<char>(r)));
      result = _mm256_or_si256(result, _mm256_and_si256(row, _mm256_shuffle_epi8(rows[r], low)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), result);
  }
  LookupBaseline(table, in + i, out + i, n - i);
}

bool HasVbmi() {
  static const bool vbmi = CpuIsa() == Isa::kAvx512 && __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

}  // namespace

void LookupBytes(const std::array<std::uint8_t, 256>& table, const std::uint8_t* in, std::uint8_t* out,
                 std::int64_t count) {
  using Span = void (*)(const std::uint8_t*, const std::uint8_t*, std::uint8_t*, std::int64_t);
  static const Span fallback = ForCpuIsa<Span>(LookupAvx2, LookupAvx2, LookupBaseline);
  const Span span = HasVbmi() ? LookupVbmi : fallback;
  InChunks(count, 1 << 16, [&](std::int64_t begin, std::int64_t n) { span(table.data(), in + begin, out + begin, n); });
}

}  // namespace onnxfuse::backend
