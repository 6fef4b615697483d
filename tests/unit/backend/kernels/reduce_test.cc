// ReduceMiddle (src/backend/kernels/reduce.h): each fold over the middle axis
// of [outer, r, inner], with and without the maps before and after, against a
// float loop that folds k in order (the kernel's documented order, so the
// result is exact on every instruction set); NaN in Max and Min; empty sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/kernels/reduce.h"
#include "kernel_check.h"

using onnxfuse::backend::ReduceFold;
using onnxfuse::backend::ReduceMap;
using onnxfuse::backend::ReduceMiddle;
using onnxfuse::backend::ReduceStep;

namespace {

float Apply(ReduceMap map, float v, float scale) {
  switch (map) {
    case ReduceMap::kNone: return v;
    case ReduceMap::kAbs: return std::fabs(v);
    case ReduceMap::kSquare: return v * v;
    case ReduceMap::kExp: return std::exp(v);
    case ReduceMap::kScale: return v * scale;
    case ReduceMap::kSqrt: return std::sqrt(v);
    case ReduceMap::kLog: return std::log(v);
  }
  return v;
}

float Fold(ReduceFold fold, float acc, float v) {
  switch (fold) {
    case ReduceFold::kSum: return acc + v;
    case ReduceFold::kProd: return acc * v;
    case ReduceFold::kMax: return std::isnan(acc) || acc > v ? acc : v;
    case ReduceFold::kMin: return std::isnan(acc) || acc < v ? acc : v;
  }
  return acc;
}

}  // namespace

TEST_CASE("ReduceMiddle folds the middle axis in order, its maps before and after", "[kernels][reduce]") {
  struct Shape {
    std::int64_t outer, r, inner;
  };
  const std::vector<Shape> shapes = {{1, 75, 1}, {2, 75, 1}, {1, 2, 75}, {3, 4, 30}, {5, 1, 17}, {2, 7, 33}};
  const std::vector<ReduceStep> steps = {
      {ReduceFold::kSum, ReduceMap::kNone, ReduceMap::kNone, 1.f},
      {ReduceFold::kSum, ReduceMap::kNone, ReduceMap::kScale, 0.25f},  // a mean
      {ReduceFold::kProd, ReduceMap::kNone, ReduceMap::kNone, 1.f},
      {ReduceFold::kMax, ReduceMap::kNone, ReduceMap::kNone, 1.f},
      {ReduceFold::kMin, ReduceMap::kNone, ReduceMap::kNone, 1.f},
      {ReduceFold::kSum, ReduceMap::kAbs, ReduceMap::kNone, 1.f},      // L1
      {ReduceFold::kSum, ReduceMap::kSquare, ReduceMap::kSqrt, 1.f},   // L2
      {ReduceFold::kSum, ReduceMap::kExp, ReduceMap::kLog, 1.f},       // LogSumExp
  };
  std::uint32_t seed = 11;
  for (const Shape& s : shapes) {
    const auto x = onnxfuse::test::RandomFloats(static_cast<std::size_t>(s.outer * s.r * s.inner), seed++, 0.5f, 1.5f);
    for (const ReduceStep& step : steps) {
      INFO("fold " << static_cast<int>(step.fold) << " pre " << static_cast<int>(step.pre) << " post "
                   << static_cast<int>(step.post) << " on [" << s.outer << ", " << s.r << ", " << s.inner << "]");
      std::vector<float> y(static_cast<std::size_t>(s.outer * s.inner) + 1, -1234.f);  // a guard past the end
      ReduceMiddle(step, x.data(), y.data(), s.outer, s.r, s.inner);
      for (std::int64_t o = 0; o < s.outer; ++o)
        for (std::int64_t i = 0; i < s.inner; ++i) {
          float acc = Apply(step.pre, x[static_cast<std::size_t>(o * s.r * s.inner + i)], step.scale);
          for (std::int64_t k = 1; k < s.r; ++k)
            acc = Fold(step.fold, acc, Apply(step.pre, x[static_cast<std::size_t>((o * s.r + k) * s.inner + i)], step.scale));
          const float want = Apply(step.post, acc, step.scale);
          const float got = y[static_cast<std::size_t>(o * s.inner + i)];
          if (got != want) FAIL("output [" << o << ", " << i << "]: " << got << " != " << want);
        }
      CHECK(y.back() == -1234.f);
    }
  }
}

TEST_CASE("ReduceMiddle's Max and Min of a NaN are NaN, and no elements writes nothing", "[kernels][reduce]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, 1.f, 2.f, nan, 3.f, 4.f};  // [1, 3, 2]: columns {nan, 2, 3} and {1, nan, 4}
  for (ReduceFold fold : {ReduceFold::kMax, ReduceFold::kMin}) {
    std::vector<float> y(2, 0.f);
    ReduceMiddle(ReduceStep{fold, ReduceMap::kNone, ReduceMap::kNone, 1.f}, x.data(), y.data(), 1, 3, 2);
    CHECK(std::isnan(y[0]));
    CHECK(std::isnan(y[1]));
  }
  std::vector<float> y(1, -1.f);
  ReduceMiddle(ReduceStep{}, x.data(), y.data(), 0, 3, 2);
  ReduceMiddle(ReduceStep{}, x.data(), y.data(), 2, 3, 0);
  CHECK(y[0] == -1.f);
}
