// Host tensors (ir's Tensor: FLOAT in `data`, INT64 in `int_data`) as
// numbers, for build-time evaluation (host_eval.h) and the lowerings that read
// constants: elements as doubles whatever the type, broadcast indexing, int64
// views, and tensors made from doubles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor_io.h"

namespace onnxfuse::eval {

/// True for an INT64 tensor (its values in int_data).
bool IsInt64(const Tensor& t);

/// A double back to int64, saturating at the int64 range: INT64_MAX, Slice's
/// "to the end" that exporters write, becomes 2^63 as a double, which a plain
/// conversion does not take.
std::int64_t SaturatingInt64(double v);

/// An INT64 (`is_int`, values saturated) or FLOAT tensor of `dims` holding `values`.
Tensor MakeHostTensor(bool is_int, std::vector<std::int64_t> dims, const std::vector<double>& values);

/// Every element as a double.
std::vector<double> HostValues(const Tensor& t);

/// Element strides of a dense row-major tensor of `dims`.
std::vector<std::int64_t> DenseStrides(const std::vector<std::int64_t>& dims);

/// The element at flat index i as a double, whatever the tensor's type.
double ElementAt(const Tensor& t, std::int64_t i);
/// Flat index into a tensor of dims `in`, multidirectionally broadcast to
/// `out` (ONNX Broadcasting.md), of the element at flat index i of `out`.
std::int64_t BroadcastIndex(std::int64_t i, const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& in);
/// BroadcastIndex(i, out, in) for every i of `out` in order, counted like an
/// odometer (no division per element).
std::vector<std::int64_t> BroadcastOffsets(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& in);
/// `t` broadcast to `out` (ONNX Broadcasting.md), its elements copied as
/// stored (int64 exactly): the dims after the last one where `t` and `out`
/// differ are copied as one block, or filled with one element where `t` is 1
/// along all of them; the dims before are counted like an odometer (an Expand
/// of detection indices to [N, 256, 7, 7] is millions of elements).
Tensor BroadcastAsStored(const Tensor& t, const std::vector<std::int64_t>& out);
/// All elements as int64 (shape-like tensors), saturating.
std::vector<std::int64_t> AsInts(const Tensor& t);

/// `t` converted to the storage type of ONNX element type `data_type`
/// (StorageTypeOf; floats to integers truncate toward zero, as Cast does) and
/// narrowed to what that type holds: integers wrapped to its width (two's
/// complement), BOOL to 0/1, FLOAT16 rounded to the nearest half (ties to
/// even); t.data_type is set to `data_type`. The values a computation in that
/// type gives, from one done wider (int64, float32, double).
void NarrowTo(Tensor& t, std::int32_t data_type);

/// `t` converted to ONNX element type `to` as Cast does (ONNX Operators.md,
/// Cast-13), in host storage: BOOL gives x != 0 (0.5 is true); every other
/// type as NarrowTo: an integer type truncates toward zero, then wraps to its
/// width; FLOAT16 rounds to the nearest half (ties to even); DOUBLE is held
/// as float. Throws Error(kUnsupported) naming `where` for a type the host
/// cannot hold (StorageTypeOf gives UNDEFINED: STRING, BFLOAT16, ...).
Tensor CastToElemType(const Tensor& t, std::int32_t to, const std::string& where);

}  // namespace onnxfuse::eval
