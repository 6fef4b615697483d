// The byte table (src/backend/kernels/byte_lookup.h) against table[in[i]]
// written out here, over counts that leave vector tails and several chunks,
// every byte value, and in place; run plain (VBMI where the CPU has it) and
// under the ISA caps (kernels.AVX2: pshufb; kernels.SSE41: a byte at a time).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/kernels/byte_lookup.h"
#include "backend/kernels/cpu_isa.h"

TEST_CASE("a byte table applied to a byte tensor", "[kernels]") {
  INFO("isa " << static_cast<int>(onnxfuse::backend::CpuIsa()));
  std::mt19937 rng(3);
  std::array<std::uint8_t, 256> table{};
  for (auto& t : table) t = static_cast<std::uint8_t>(rng());
  for (std::int64_t n : {1, 63, 64, 65, 256, 1000, 200000}) {
    INFO("count " << n);
    std::vector<std::uint8_t> in(static_cast<std::size_t>(n)), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint8_t>(i < 256 ? i : rng());
    onnxfuse::backend::LookupBytes(table, in.data(), out.data(), n);
    int wrong = 0;
    for (std::size_t i = 0; i < in.size(); ++i) wrong += out[i] != table[in[i]];
    CHECK(wrong == 0);
    std::vector<std::uint8_t> same = in;
    onnxfuse::backend::LookupBytes(table, same.data(), same.data(), n);
    CHECK(same == out);
  }
}
