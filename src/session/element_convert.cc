#include "session/element_convert.h"

#include <cstring>

#include "ir/tensor_values.h"
#include "onnxfuse/error.h"

namespace onnxfuse::session {

namespace {

template <typename T, typename S>
void Widen(const void* src, std::int64_t count, void* dst) {
  const T* in = static_cast<const T*>(src);
  S* out = static_cast<S*>(dst);
  for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<S>(in[i]);
}

template <typename T, typename S>
void Narrow(const void* src, std::int64_t count, void* dst) {
  const S* in = static_cast<const S*>(src);
  T* out = static_cast<T*>(dst);
  for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(in[i]);
}

}  // namespace

ElementType StorageOf(ElementType type) {
  switch (type) {
    case ElementType::kFloat:
    case ElementType::kFloat16:
    case ElementType::kDouble:
      return ElementType::kFloat;
    case ElementType::kUint8:
    case ElementType::kInt8:
    case ElementType::kUint16:
    case ElementType::kInt16:
    case ElementType::kInt32:
    case ElementType::kInt64:
    case ElementType::kBool:
    case ElementType::kUint32:
    case ElementType::kUint64:
      return ElementType::kInt64;
    default:
      return ElementType::kUndefined;
  }
}

void WidenToStorage(ElementType type, const void* src, std::int64_t count, void* dst) {
  if (count <= 0) return;
  switch (type) {
    case ElementType::kFloat: std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float)); return;
    case ElementType::kInt64: std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(std::int64_t)); return;
    case ElementType::kDouble: Widen<double, float>(src, count, dst); return;
    case ElementType::kFloat16: {
      const auto* in = static_cast<const std::uint16_t*>(src);
      auto* out = static_cast<float*>(dst);
      for (std::int64_t i = 0; i < count; ++i) out[i] = HalfToFloat(in[i]);
      return;
    }
    case ElementType::kUint8: Widen<std::uint8_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt8: Widen<std::int8_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint16: Widen<std::uint16_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt16: Widen<std::int16_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt32: Widen<std::int32_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint32: Widen<std::uint32_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint64: Widen<std::uint64_t, std::int64_t>(src, count, dst); return;
    case ElementType::kBool: {
      const auto* in = static_cast<const std::uint8_t*>(src);
      auto* out = static_cast<std::int64_t*>(dst);
      for (std::int64_t i = 0; i < count; ++i) out[i] = in[i] != 0;
      return;
    }
    default: break;
  }
  throw Error(ErrorKind::kUnsupported, "element type " + ElementTypeName(type) + " has no run-time storage");
}

void NarrowFromStorage(ElementType type, const void* src, std::int64_t count, void* dst) {
  if (count <= 0) return;
  switch (type) {
    case ElementType::kFloat: std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float)); return;
    case ElementType::kInt64: std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(std::int64_t)); return;
    case ElementType::kDouble: Narrow<double, float>(src, count, dst); return;
    case ElementType::kFloat16: {
      const auto* in = static_cast<const float*>(src);
      auto* out = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < count; ++i) out[i] = FloatToHalf(in[i]);
      return;
    }
    case ElementType::kUint8: Narrow<std::uint8_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt8: Narrow<std::int8_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint16: Narrow<std::uint16_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt16: Narrow<std::int16_t, std::int64_t>(src, count, dst); return;
    case ElementType::kInt32: Narrow<std::int32_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint32: Narrow<std::uint32_t, std::int64_t>(src, count, dst); return;
    case ElementType::kUint64: Narrow<std::uint64_t, std::int64_t>(src, count, dst); return;
    case ElementType::kBool: {
      const auto* in = static_cast<const std::int64_t*>(src);
      auto* out = static_cast<std::uint8_t*>(dst);
      for (std::int64_t i = 0; i < count; ++i) out[i] = in[i] != 0;
      return;
    }
    default: break;
  }
  throw Error(ErrorKind::kUnsupported, "element type " + ElementTypeName(type) + " has no run-time storage");
}

Tensor TensorFromView(const std::string& name, const TensorView& view) {
  Tensor t;
  t.name = name;
  t.data_type = static_cast<std::int32_t>(view.dtype);
  t.dims = view.shape;
  t.elem_type = static_cast<std::int32_t>(StorageOf(view.dtype));  // ElementType numbers as ONNX does
  const auto count = static_cast<std::size_t>(view.NumElements());
  if (view.dtype == ElementType::kFloat) {  // the storage type: one copy, no widening
    const auto* from = static_cast<const float*>(view.data);
    t.data.assign(from, from + count);
    return t;
  }
  if (view.dtype == ElementType::kInt64) {
    const auto* from = static_cast<const std::int64_t*>(view.data);
    t.int_data.assign(from, from + count);
    return t;
  }
  void* dst = nullptr;
  if (StorageOf(view.dtype) == ElementType::kInt64) {
    t.int_data.resize(count);
    dst = t.int_data.data();
  } else {
    t.data.resize(count);
    dst = t.data.data();
  }
  WidenToStorage(view.dtype, view.data, view.NumElements(), dst);
  return t;
}

}  // namespace onnxfuse::session
