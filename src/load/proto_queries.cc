#include "load/proto_queries.h"

#include <algorithm>

namespace onnxfuse {

bool StaticShape(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
  const auto& dims = type.tensor_type().shape().dim();
  return std::all_of(dims.begin(), dims.end(), [](const auto& d) { return d.has_dim_value(); });
}

std::int64_t NumElements(const onnx::TensorProto& tensor) {
  std::int64_t n = 1;
  for (std::int64_t d : tensor.dims()) n *= d;
  return n;
}

bool HasSubgraph(const onnx::NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(),
                     [](const onnx::AttributeProto& a) { return a.has_g() || a.graphs_size() > 0; });
}

}  // namespace onnxfuse
