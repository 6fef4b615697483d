// Which dims follow the input shapes (varying_dims.h).
#include "ir/varying_dims.h"

#include <algorithm>

namespace onnxfuse {

VaryingDims VaryingDimsOf(const Graph& symbolic) {
  VaryingDims varying;
  for (const Value& value : symbolic.values()) {
    const TensorType& type = value.type;
    if (value.name.empty()) continue;  // an omitted optional input
    if (!type.has_shape) {
      varying.emplace(value.name, std::vector<bool>{});
      continue;
    }
    std::vector<bool> flags(type.dims.size());
    std::transform(type.dims.begin(), type.dims.end(), flags.begin(), [](std::int64_t d) { return d < 0; });
    if (std::find(flags.begin(), flags.end(), true) != flags.end()) varying.emplace(value.name, std::move(flags));
  }
  return varying;
}

std::vector<bool> VaryingDimsAt(const VaryingDims& varying, const std::string& name, std::size_t rank) {
  auto it = varying.find(name);
  if (it == varying.end()) return std::vector<bool>(rank, false);
  if (it->second.size() != rank) return std::vector<bool>(rank, true);
  return it->second;
}

}  // namespace onnxfuse
