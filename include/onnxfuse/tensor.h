// An owned host tensor: what InferenceSession::Run returns (session.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse {

/// A dense, row-major (C order) host tensor. Element types are numbered as
/// ONNX's TensorProto::DataType (and ElementType, tensor_view.h). Exactly one
/// of `data` / `int_data` holds the elements: `data` when elem_type is 1
/// (float32: float32, float16 and float64 values, computed in float32),
/// `int_data` when it is 7 (int64: every integer type and bool as 0 or 1).
struct Tensor {
  std::string name;
  std::int32_t elem_type = 1;  ///< the storage type: 1 (float32) or 7 (int64)
  /// The ONNX element type the values stand for (10 float16, 9 bool, 6 int32,
  /// ...), stored as elem_type; 0: elem_type itself. Files are written in
  /// this type.
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
  std::vector<float> data;
  std::vector<std::int64_t> int_data;

  /// Product of the dims (1 for a scalar, dims {}).
  std::int64_t NumElements() const;
  /// data_type, or elem_type when data_type is unset.
  std::int32_t DataType() const { return data_type != 0 ? data_type : elem_type; }
};

/// Reads one serialized onnx.TensorProto file, as the ONNX backend tests store
/// inputs and outputs (test_data_set_0/input_0.pb): float32, float16, float64,
/// the integer types and bool, from raw_data or the typed field. Throws Error
/// (error.h): kIo when the file cannot be read, kInvalidModel when it is not a
/// TensorProto or its data disagrees with its dims, kUnsupported for other
/// element types or external data.
Tensor ReadTensorFile(const std::string& path);

}  // namespace onnxfuse
