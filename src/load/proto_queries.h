// Small questions the load stage asks of ONNX protos, in one place: whether a
// type's shape is fully known, how many elements a tensor holds, whether a
// node carries a subgraph (If, Loop, Scan).
#pragma once

#include <cstdint>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// True when `type` is a tensor type whose shape is declared and every dim
/// has a value (no dim_param, no unknown dim).
bool StaticShape(const onnx::TypeProto& type);

/// The product of `tensor`'s dims (1 for a scalar), whether or not its data is present.
std::int64_t NumElements(const onnx::TensorProto& tensor);

/// True when one of `node`'s attributes is a graph or a list of graphs.
bool HasSubgraph(const onnx::NodeProto& node);

}  // namespace onnxfuse
