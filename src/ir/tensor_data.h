// What a TensorProto's declared type and dims promise, checked against the
// data it carries, before anything trusts either.
//
// A model file is untrusted input: an initializer may declare dims whose
// product overflows int64, or whose size is terabytes while it carries a few
// bytes; raw_data may be shorter or longer than its dims need. Everything
// downstream (BN folding, pattern predicates, the backend, shape inference's
// reads of Reshape targets) indexes tensor data by its dims, so the loader
// refuses such a tensor up front with a message naming it, and sizes are
// computed with overflow checks, never by plain multiplication.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Bytes per element of a fixed-size ONNX data type; 0 for STRING, UNDEFINED and unknown codes.
std::int64_t ElementBytes(std::int32_t data_type);

/// Product of `dims`, or nullopt when a dim is negative or the product exceeds INT64_MAX.
std::optional<std::int64_t> CheckedElementCount(const google::protobuf::RepeatedField<std::int64_t>& dims);

/// a * b, or nullopt on overflow (both non-negative).
std::optional<std::int64_t> CheckedMultiply(std::int64_t a, std::int64_t b);

/// Size of the tensor's data in bytes from its type and dims (raw_data layout),
/// or nullopt for a variable-size type (STRING) or dims that do not multiply.
std::optional<std::int64_t> TensorDataBytes(const onnx::TensorProto& tensor);

/// Throws Error(kInvalidModel) "<source>: <what> ..." unless the tensor's data
/// agrees with its type and dims: a known data type, dims >= 0 whose byte size
/// fits in int64, and exactly one of: raw_data of the exact byte size; the typed
/// field of its type with one value per element (two for complex types); no
/// data for an empty tensor. A tensor marked EXTERNAL is checked for its
/// declared `length` instead (its bytes are not in the model). Segmented
/// tensors are refused (kUnsupported).
void ValidateTensorData(const onnx::TensorProto& tensor, const std::string& what, const std::string& source);

/// Calls `visit(tensor, what)` for every tensor stored in `graph`: initializers,
/// tensor-valued attributes of every node (Constant's `value`), recursing into
/// subgraph attributes (If/Loop/Scan bodies). `what` names it for messages,
/// e.g. "initializer 'w'" or "attribute 'value' of node 'c0'".
void ForEachTensor(onnx::GraphProto& graph,
                   const std::function<void(onnx::TensorProto& tensor, const std::string& what)>& visit);

}  // namespace onnxfuse
