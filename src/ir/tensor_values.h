// The one TensorProto decoder (and its encoder for float/double results):
// a tensor's elements as host numbers, whatever field the model stored them in.
//
// Storage (onnx.proto, TensorProto): raw_data holds the elements densely in
// little-endian order (the ONNX spec's byte order; onnx-fuse targets x86-64, a
// little-endian host, so bytes are copied as they are); otherwise the typed
// field of the element type holds one entry per element: float_data (FLOAT),
// double_data (DOUBLE), int64_data (INT64), uint64_data (UINT32, UINT64),
// int32_data (INT32, INT16, INT8, UINT16, UINT8, BOOL, and FLOAT16 as its 16 bits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// The elements of `tensor` in row-major order, each converted to T (float,
/// double or std::int64_t) with static_cast; FLOAT16 goes through its IEEE 754
/// half value. Element types: FLOAT, DOUBLE, FLOAT16, INT64, INT32, INT16, INT8,
/// UINT64, UINT32, UINT16, UINT8, BOOL.
/// `where` names the tensor in messages. Throws Error(kUnsupported) for other
/// element types and for external data, Error(kInvalidModel) when the dims are
/// negative or overflow, or the data holds another number of elements than they need.
template <typename T>
std::vector<T> DecodeTensor(const onnx::TensorProto& tensor, const std::string& where);

/// A FLOAT, DOUBLE or FLOAT16 tensor `name` of shape `dims` holding `values`
/// (rounded to float, or to the nearest half, ties to even), as little-endian
/// raw_data, the encoding exporters use.
onnx::TensorProto EncodeTensor(const std::string& name, std::int32_t data_type, const std::vector<std::int64_t>& dims,
                               const std::vector<double>& values);
/// An integer or BOOL tensor (INT64, INT32, INT16, INT8, UINT64, UINT32,
/// UINT16, UINT8, BOOL) holding `values`, each wrapped to the type's width
/// (two's complement, as a C++ conversion does); BOOL stores v != 0.
onnx::TensorProto EncodeIntTensor(const std::string& name, std::int32_t data_type, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::int64_t>& values);

/// IEEE 754 binary16 bits of `value`, rounded to nearest, ties to even
/// (overflow to infinity, NaN kept).
std::uint16_t FloatToHalf(float value);
/// The float value of IEEE 754 binary16 bits.
float HalfToFloat(std::uint16_t bits);

}  // namespace onnxfuse
