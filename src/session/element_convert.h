// Caller element types to and from the runtime's storage types
// (tensor_io.h StorageTypeOf): float32, float16 and float64 are held as
// float32; every integer type and bool as int64.
#pragma once

#include <cstdint>

#include <string>

#include "onnxfuse/tensor.h"
#include "onnxfuse/tensor_view.h"

namespace onnxfuse::session {

/// The runtime storage of `type`: kFloat or kInt64; kUndefined when it has none.
ElementType StorageOf(ElementType type);

/// Converts `count` elements of `type` at `src` into its storage at `dst`
/// (float32 or int64, StorageOf(type)): float16 and float64 to float32
/// (float64 rounded to nearest), integers and bool widened to int64.
void WidenToStorage(ElementType type, const void* src, std::int64_t count, void* dst);

/// The inverse: `count` storage elements at `src` written to `dst` as `type`:
/// float32 rounded to float16 or widened to float64, int64 wrapped to the
/// integer type's width (two's complement), bool as 0/1 (non-zero is 1).
void NarrowFromStorage(ElementType type, const void* src, std::int64_t count, void* dst);

/// An owned copy of `view` named `name`, in its storage (WidenToStorage):
/// Tensor::data_type the view's type.
Tensor TensorFromView(const std::string& name, const TensorView& view);

}  // namespace onnxfuse::session
