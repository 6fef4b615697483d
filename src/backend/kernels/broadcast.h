// Elementwise loops over multidirectionally broadcast operands (ONNX
// Broadcasting.md: dims aligned from the right, a dim of 1 repeated), for the
// kernels of our own that read several tensors of different shapes (Where).
//
// The output, dense row-major, is walked one row (its last dim) at a time:
// each operand's offset at a row's start comes from its strides over the outer
// dims (0 where it is broadcast), and within the row it advances by 1, or by 0
// when its last dim is broadcast. The inner loop is then a plain strided loop
// the compiler vectorises; rows are split across OpenMP threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace onnxfuse::backend {

template <std::size_t K>
struct BroadcastPlan {
  std::vector<std::int64_t> outer;                       ///< output dims but the last
  std::int64_t inner = 1;                                ///< the output's last dim (1 for a scalar)
  std::array<std::vector<std::int64_t>, K> strides;      ///< per operand, element strides over `outer` (0: broadcast)
  std::array<std::int64_t, K> inner_step{};              ///< per operand, 1, or 0 when its last dim is broadcast
  std::int64_t rows = 1;                                 ///< product of `outer`
};

/// The plan for an output of dims `out` and operands of dims `in` (each
/// broadcastable to `out`, rank at most out's).
template <std::size_t K>
BroadcastPlan<K> PlanBroadcast(const std::vector<std::int64_t>& out, const std::array<std::vector<std::int64_t>, K>& in) {
  BroadcastPlan<K> plan;
  const std::size_t rank = out.size();
  if (rank > 0) plan.inner = out.back();
  for (std::size_t d = 0; d + 1 < rank; ++d) plan.outer.push_back(out[d]), plan.rows *= out[d];
  for (std::size_t k = 0; k < K; ++k) {
    std::vector<std::int64_t> dims(rank - in[k].size(), 1);
    dims.insert(dims.end(), in[k].begin(), in[k].end());
    std::vector<std::int64_t> dense(rank, 1);
    for (std::size_t d = rank; d-- > 1;) dense[d - 1] = dense[d] * dims[d];
    for (std::size_t d = 0; d + 1 < rank; ++d) plan.strides[k].push_back(dims[d] == 1 ? 0 : dense[d]);
    plan.inner_step[k] = rank > 0 && dims[rank - 1] != 1 ? 1 : 0;
  }
  return plan;
}

/// Calls row(out_offset, in_offsets) for every output row, in parallel: the
/// offsets (in elements) of the row's first element in the output and in each
/// operand. `row` must be safe to call concurrently for different rows.
template <std::size_t K, typename Row>
void ForEachBroadcastRow(const BroadcastPlan<K>& plan, const Row& row) {
  const std::int64_t rows = plan.rows;
#pragma omp parallel for schedule(static) if (rows * plan.inner >= (1 << 15))
  for (std::int64_t r = 0; r < rows; ++r) {
    std::array<std::int64_t, K> at{};
    std::int64_t rest = r;
    for (std::size_t d = plan.outer.size(); d-- > 0;) {
      const std::int64_t coord = rest % plan.outer[d];
      rest /= plan.outer[d];
      for (std::size_t k = 0; k < K; ++k) at[k] += coord * plan.strides[k][d];
    }
    row(r * plan.inner, at);
  }
}

}  // namespace onnxfuse::backend
