// Tensors over the caller's memory, for InferenceSession::Run (session.h).
//
// A TensorView does not own its elements: it names an element type, a shape
// and a pointer to dense, row-major (C order) elements of that type, which
// must stay valid and unchanged for the duration of the call it is passed to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse {

/// Element types, numbered as ONNX's TensorProto::DataType (onnx.proto), so a
/// value converts to and from that enum directly.
enum class ElementType : std::int32_t {
  kUndefined = 0,
  kFloat = 1,     ///< float32
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,      ///< one byte per element, 0 or 1
  kFloat16 = 10,  ///< IEEE 754 binary16, as its 16 bits (uint16_t)
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
};

/// Bytes per element of `type`; 0 for kUndefined and types not listed above.
std::size_t ElementSize(ElementType type);
/// "float32", "int64", "bool", ... ; "undefined" for others.
std::string ElementTypeName(ElementType type);

/// A read-only tensor over caller memory: `data` points to Product(shape)
/// elements of `dtype`, row-major. A 0-size tensor may have data == nullptr.
struct TensorView {
  ElementType dtype = ElementType::kFloat;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;

  /// Product of the dims (1 for a scalar, shape {}).
  std::int64_t NumElements() const;
};

/// A writable tensor over caller memory: where InferenceSession::Run stores
/// one output (dtype and shape must equal the output's).
struct MutableTensorView {
  ElementType dtype = ElementType::kFloat;
  std::vector<std::int64_t> shape;
  void* data = nullptr;

  std::int64_t NumElements() const;
};

}  // namespace onnxfuse
