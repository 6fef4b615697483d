// A table of 256 bytes applied to a byte tensor, out[i] = table[in[i]]: an
// elementwise function of an 8-bit quantized tensor, quantized again
// (backend/lower/fused/int8_lookup.h). With AVX-512 VBMI, 64 bytes at a time
// by two vpermi2b over the table's halves and a blend on the index's top bit
// (Intel's intrinsics guide, _mm512_permutex2var_epi8); with AVX2, 32 bytes
// at a time by sixteen pshufb (one per high nibble) and masks; otherwise a
// byte at a time. Over OpenMP threads.
#pragma once

#include <array>
#include <cstdint>

namespace onnxfuse::backend {

/// out[i] = table[in[i]] for i < count; `out` may be `in`.
void LookupBytes(const std::array<std::uint8_t, 256>& table, const std::uint8_t* in, std::uint8_t* out,
                 std::int64_t count);

}  // namespace onnxfuse::backend
