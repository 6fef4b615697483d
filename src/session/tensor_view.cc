#include "onnxfuse/tensor_view.h"

namespace onnxfuse {

std::size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kFloat: case ElementType::kInt32: case ElementType::kUint32: return 4;
    case ElementType::kUint8: case ElementType::kInt8: case ElementType::kBool: return 1;
    case ElementType::kUint16: case ElementType::kInt16: case ElementType::kFloat16: return 2;
    case ElementType::kInt64: case ElementType::kDouble: case ElementType::kUint64: return 8;
    default: return 0;
  }
}

std::string ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kFloat: return "float32";
    case ElementType::kUint8: return "uint8";
    case ElementType::kInt8: return "int8";
    case ElementType::kUint16: return "uint16";
    case ElementType::kInt16: return "int16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kBool: return "bool";
    case ElementType::kFloat16: return "float16";
    case ElementType::kDouble: return "float64";
    case ElementType::kUint32: return "uint32";
    case ElementType::kUint64: return "uint64";
    default: return "undefined";
  }
}

namespace {
std::int64_t Product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}
}  // namespace

std::int64_t TensorView::NumElements() const { return Product(shape); }
std::int64_t MutableTensorView::NumElements() const { return Product(shape); }

}  // namespace onnxfuse
