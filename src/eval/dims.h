// Tensor dims as plain numbers: the extent arithmetic the host evaluator and
// the oneDNN lowerings share (the backend re-exports these from
// backend/lower/core/dnnl_util.h), kept free of oneDNN so that the evaluator builds
// without it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse::eval {

using Dims = std::vector<std::int64_t>;

/// The number of elements of `dims` (1 for rank 0).
std::int64_t Product(const Dims& dims);
/// "[2,3,4]".
std::string DimsString(const Dims& dims);

/// Numpy-style broadcast of two shapes; throws std::invalid_argument when incompatible.
Dims BroadcastDims(const Dims& a, const Dims& b);
/// `dims` left-padded with 1s to `rank`.
Dims ExpandRank(const Dims& dims, std::size_t rank);

/// Gather's extents (ONNX Operators.md, Gather-13): data of dims `data` taken
/// at indices of dims `indices` along `axis` (in [0, rank)) gives
/// data[:axis] + indices + data[axis+1:]. Seen as [outer, n, inner] data, it
/// copies `outer` times `count` rows of `inner` elements.
struct GatherExtents {
  Dims out;
  std::int64_t outer, n, inner, count;
};
GatherExtents GatherExtentsOf(const Dims& data, std::size_t axis, const Dims& indices);

}  // namespace onnxfuse::eval
