// BroadcastBinary (src/backend/kernels/broadcast_binary.h): every element of
// Add, Sub, Mul, Div, Max, Min and PRelu against a reference that indexes each operand by
// ONNX's broadcasting rule directly (kernel_check.h), over operands that both
// broadcast (RAFT's [256,1,1,2] + [1,7,7,2]), in the last dim (each operand
// stepping along a row, or one, or neither), from lower ranks and scalars,
// empty, and large enough to split rows across threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/kernels/broadcast_binary.h"
#include "kernel_check.h"

using onnxfuse::backend::BinaryAlg;
using onnxfuse::backend::BroadcastBinary;
using onnxfuse::backend::PlanBroadcast;
using onnxfuse::test::BroadcastSourceIndex;
using onnxfuse::test::Count;
using Dims = std::vector<std::int64_t>;

TEST_CASE("BroadcastBinary computes each operation with both operands broadcast", "[kernels][broadcast_binary]") {
  struct Case {
    Dims out, a, b;
  };
  const std::vector<Case> cases = {
      {{256, 7, 7, 2}, {256, 1, 1, 2}, {1, 7, 7, 2}},  // RAFT's coordinate offsets
      {{4, 6}, {4, 1}, {1, 6}},                        // an outer product
      {{3, 5, 1}, {5, 1}, {3, 1, 1}},                  // lower rank; a last dim of 1
      {{2, 3, 4}, {}, {2, 1, 4}},                      // a scalar
      {{64, 32, 33}, {64, 1, 33}, {32, 1}},            // rows split across threads
      {{}, {}, {}},
      {{2, 0, 3}, {2, 0, 3}, {1, 1, 3}},               // no elements
      {{3, 0}, {3, 1}, {0}},                           // no elements, a broadcast row
  };
  const std::vector<std::pair<BinaryAlg, double (*)(double, double)>> algs = {
      {BinaryAlg::kAdd, [](double x, double y) { return x + y; }},
      {BinaryAlg::kSub, [](double x, double y) { return x - y; }},
      {BinaryAlg::kMul, [](double x, double y) { return x * y; }},
      {BinaryAlg::kDiv, [](double x, double y) { return x / y; }},
      {BinaryAlg::kMax, [](double x, double y) { return std::max(x, y); }},
      {BinaryAlg::kMin, [](double x, double y) { return std::min(x, y); }},
      {BinaryAlg::kPRelu, [](double x, double y) { return x < 0 ? y * x : x; }},
  };
  std::uint32_t seed = 7;
  for (const Case& c : cases) {
    // b away from 0, so that Div's reference is well conditioned.
    const auto a = onnxfuse::test::RandomFloats(static_cast<std::size_t>(Count(c.a)), seed++);
    const auto b = onnxfuse::test::RandomFloats(static_cast<std::size_t>(Count(c.b)), seed++, 0.5f, 2.f);
    for (const auto& [alg, reference] : algs) {
      INFO("alg " << static_cast<int>(alg) << ", output of rank " << c.out.size() << ", " << Count(c.out) << " elements");
      std::vector<float> out(static_cast<std::size_t>(Count(c.out)) + 1, -1234.f);  // a guard element past the end
      BroadcastBinary(alg, a.data(), b.data(), out.data(), PlanBroadcast<2>(c.out, {c.a, c.b}));
      for (std::int64_t i = 0; i < Count(c.out); ++i) {
        const double want = reference(a[static_cast<std::size_t>(BroadcastSourceIndex(i, c.out, c.a))],
                                      b[static_cast<std::size_t>(BroadcastSourceIndex(i, c.out, c.b))]);
        // Exact: one IEEE float operation, rounded once, on every instruction
        // set (the double result of two floats' +, -, * or / rounds to the float one).
        const float got = out[static_cast<std::size_t>(i)];
        if (got != static_cast<float>(want)) FAIL("element " << i << ": " << got << " != " << static_cast<float>(want));
      }
      CHECK(out.back() == -1234.f);
    }
  }
}

TEST_CASE("BroadcastBinary's Max and Min of a NaN are NaN", "[kernels][broadcast_binary]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {nan, 1.f}, b = {2.f, nan};
  std::vector<float> out(4);
  for (BinaryAlg alg : {BinaryAlg::kMax, BinaryAlg::kMin}) {
    BroadcastBinary(alg, a.data(), b.data(), out.data(), PlanBroadcast<2>({2, 2}, {Dims{2, 1}, Dims{1, 2}}));
    CHECK(std::isnan(out[0]));  // NaN against 2
    CHECK(std::isnan(out[1]));  // NaN against NaN
    CHECK(out[2] == (alg == BinaryAlg::kMax ? 2.f : 1.f));
    CHECK(std::isnan(out[3]));  // 1 against NaN
  }
}
