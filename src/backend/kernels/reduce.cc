#include "backend/kernels/reduce.h"

#include <cmath>

#include "backend/kernels/cpu_isa.h"

namespace onnxfuse::backend {

namespace {

[[gnu::always_inline]] inline float Map(ReduceMap map, float v, float scale) {
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

template <ReduceFold kFold>
[[gnu::always_inline]] inline float Fold(float acc, float v) {
  if constexpr (kFold == ReduceFold::kSum) return acc + v;
  if constexpr (kFold == ReduceFold::kProd) return acc * v;
  if constexpr (kFold == ReduceFold::kMax) return acc != acc || acc > v ? acc : v;  // NaN stays
  return acc != acc || acc < v ? acc : v;                                           // kMin
}

// Folds row k of each of the `outer` slices into y, one contiguous row of
// `inner` values at a time (vectorised without a pre-map: the loop is plain).
template <ReduceFold kFold>
[[gnu::always_inline]] inline void Middle(const ReduceStep& s, const float* x, float* y, std::int64_t outer,
                                          std::int64_t r, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o) {
    const float* xo = x + o * r * inner;
    float* yo = y + o * inner;
    if (s.pre == ReduceMap::kNone) {
      for (std::int64_t i = 0; i < inner; ++i) yo[i] = xo[i];
      for (std::int64_t k = 1; k < r; ++k) {
        const float* row = xo + k * inner;
        for (std::int64_t i = 0; i < inner; ++i) yo[i] = Fold<kFold>(yo[i], row[i]);
      }
    } else {
      for (std::int64_t i = 0; i < inner; ++i) yo[i] = Map(s.pre, xo[i], s.scale);
      for (std::int64_t k = 1; k < r; ++k) {
        const float* row = xo + k * inner;
        for (std::int64_t i = 0; i < inner; ++i) yo[i] = Fold<kFold>(yo[i], Map(s.pre, row[i], s.scale));
      }
    }
    if (s.post != ReduceMap::kNone)
      for (std::int64_t i = 0; i < inner; ++i) yo[i] = Map(s.post, yo[i], s.scale);
  }
}

[[gnu::always_inline]] inline void AnyMiddle(const ReduceStep& s, const float* x, float* y, std::int64_t outer,
                                             std::int64_t r, std::int64_t inner) {
  switch (s.fold) {
    case ReduceFold::kSum: return Middle<ReduceFold::kSum>(s, x, y, outer, r, inner);
    case ReduceFold::kProd: return Middle<ReduceFold::kProd>(s, x, y, outer, r, inner);
    case ReduceFold::kMax: return Middle<ReduceFold::kMax>(s, x, y, outer, r, inner);
    case ReduceFold::kMin: return Middle<ReduceFold::kMin>(s, x, y, outer, r, inner);
  }
}

// AnyMiddle built once per instruction set (ForCpuIsa chooses). The fold runs
// k in order for every output, so every build gives the same bits.
using MiddleFn = void (*)(const ReduceStep&, const float*, float*, std::int64_t, std::int64_t, std::int64_t);
__attribute__((target("avx512f"))) void MiddleAvx512(const ReduceStep& s, const float* x, float* y,
                                                    std::int64_t outer, std::int64_t r, std::int64_t inner) {
  AnyMiddle(s, x, y, outer, r, inner);
}
__attribute__((target("avx2"))) void MiddleAvx2(const ReduceStep& s, const float* x, float* y, std::int64_t outer,
                                                std::int64_t r, std::int64_t inner) {
  AnyMiddle(s, x, y, outer, r, inner);
}
void MiddleBaseline(const ReduceStep& s, const float* x, float* y, std::int64_t outer, std::int64_t r,
                    std::int64_t inner) {
  AnyMiddle(s, x, y, outer, r, inner);
}

}  // namespace

void ReduceMiddle(const ReduceStep& step, const float* x, float* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) {
  static const MiddleFn middle = ForCpuIsa<MiddleFn>(MiddleAvx512, MiddleAvx2, MiddleBaseline);
  if (outer == 0 || inner == 0) return;
  middle(step, x, y, outer, r, inner);
}

}  // namespace onnxfuse::backend
