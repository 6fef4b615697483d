// WhereSelect (src/backend/kernels/select.h) and its broadcast plan
// (broadcast.h): every element against a reference that indexes each operand
// by ONNX's broadcasting rule directly, over shapes that broadcast in the
// last dim (each operand stepping along a row or not), in outer dims, from
// lower ranks and from scalars, empty, small and large enough to split rows
// across threads; on every instruction set (the kernels ctest variants).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "backend/kernels/select.h"
#include "kernel_check.h"

using onnxfuse::backend::PlanBroadcast;
using onnxfuse::backend::WhereSelect;
using Dims = std::vector<std::int64_t>;

using onnxfuse::test::BroadcastSourceIndex;
using onnxfuse::test::Count;

TEST_CASE("WhereSelect picks x where cond is set and y elsewhere, each operand broadcast", "[kernels][select]") {
  struct Case {
    Dims out, cond, x, y;
  };
  const std::vector<Case> cases = {
      {{7}, {7}, {7}, {7}},
      {{2, 3, 5}, {2, 3, 5}, {5}, {}},                       // x a row, y a scalar
      {{4, 6}, {4, 1}, {1, 6}, {4, 6}},                      // outer and inner broadcasts
      {{1, 12, 128, 128}, {1, 1, 128, 128}, {1, 12, 128, 128}, {1}},  // GPT-2's causal mask: threads split rows
      {{3, 1, 5}, {1}, {3, 1, 5}, {3, 1, 1}},
      {{}, {}, {}, {}},                                      // scalars
      // each way the operands step along a row (1, or 0 where the last dim broadcasts)
      {{2, 6}, {2, 6}, {2, 1}, {6}},
      {{3, 4}, {3, 4}, {1}, {3, 1}},
      {{2, 5}, {2, 1}, {2, 1}, {5}},
      {{2, 5}, {2, 1}, {1}, {2, 1}},
      {{2, 0, 3}, {2, 0, 3}, {3}, {1}},                      // no elements
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    INFO("output dims of rank " << c.out.size() << ", " << Count(c.out) << " elements");
    const auto x = onnxfuse::test::RandomFloats(static_cast<std::size_t>(Count(c.x)), seed++);
    const auto y = onnxfuse::test::RandomFloats(static_cast<std::size_t>(Count(c.y)), seed++);
    std::vector<std::int64_t> cond(static_cast<std::size_t>(Count(c.cond)));
    for (std::size_t i = 0; i < cond.size(); ++i) cond[i] = (i * 7 + seed) % 3 == 0 ? 0 : static_cast<std::int64_t>(i % 5 + 1);
    std::vector<float> out(static_cast<std::size_t>(Count(c.out)) + 1, -1234.f);  // one guard element past the end
    WhereSelect(cond.data(), x.data(), y.data(), out.data(), PlanBroadcast<3>(c.out, {c.cond, c.x, c.y}));
    for (std::int64_t i = 0; i < Count(c.out); ++i) {
      const bool take_x = cond[static_cast<std::size_t>(BroadcastSourceIndex(i, c.out, c.cond))] != 0;
      const float want = take_x ? x[static_cast<std::size_t>(BroadcastSourceIndex(i, c.out, c.x))]
                                : y[static_cast<std::size_t>(BroadcastSourceIndex(i, c.out, c.y))];
      if (out[static_cast<std::size_t>(i)] != want) FAIL("element " << i << ": " << out[static_cast<std::size_t>(i)] << " != " << want);
    }
    CHECK(out.back() == -1234.f);
  }
}
