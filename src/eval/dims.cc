#include "eval/dims.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace onnxfuse::eval {

std::int64_t Product(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

std::string DimsString(const Dims& dims) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < dims.size(); ++i) out << (i ? "," : "") << dims[i];
  out << ']';
  return out.str();
}

Dims ExpandRank(const Dims& dims, std::size_t rank) {
  Dims out(rank > dims.size() ? rank - dims.size() : 0, 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

Dims BroadcastDims(const Dims& a, const Dims& b) {
  std::size_t rank = std::max(a.size(), b.size());
  Dims x = ExpandRank(a, rank), y = ExpandRank(b, rank), out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    if (x[i] != y[i] && x[i] != 1 && y[i] != 1)
      throw std::invalid_argument("shapes " + DimsString(a) + " and " + DimsString(b) + " do not broadcast");
    out[i] = x[i] == 1 ? y[i] : x[i];
  }
  return out;
}

GatherExtents GatherExtentsOf(const Dims& data, std::size_t axis, const Dims& indices) {
  const auto at = data.begin() + static_cast<std::ptrdiff_t>(axis);
  GatherExtents e;
  e.out.assign(data.begin(), at);
  e.out.insert(e.out.end(), indices.begin(), indices.end());
  e.out.insert(e.out.end(), at + 1, data.end());
  e.outer = Product(Dims(data.begin(), at));
  e.n = *at;
  e.inner = Product(Dims(at + 1, data.end()));
  e.count = Product(indices);
  return e;
}

}  // namespace onnxfuse::eval
