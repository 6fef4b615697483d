#include "eval/host_tensor.h"

#include <cmath>
#include <limits>

#include "eval/dims.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

bool IsInt64(const Tensor& t) { return t.elem_type == onnx::TensorProto::INT64; }

// A double back to int64, saturating: INT64_MAX, the "to the end" of Slice's
// ends that exporters write, becomes 2^63 as a double, which does not convert.
// NaN has no integer (ONNX leaves Cast of NaN to an integer type undefined):
// INT64_MIN, what x86's conversion instruction (cvttsd2si) gives and so what a
// compiled Cast gives on the CPUs we run on; converting it in C++ is undefined.
std::int64_t SaturatingInt64(double v) {
  if (std::isnan(v)) return std::numeric_limits<std::int64_t>::min();
  constexpr double kTwo63 = 9223372036854775808.0;
  if (v >= kTwo63) return std::numeric_limits<std::int64_t>::max();
  if (v <= -kTwo63) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

Tensor MakeHostTensor(bool is_int, Dims dims, const std::vector<double>& values) {
  Tensor t;
  t.elem_type = is_int ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT;
  t.dims = std::move(dims);
  if (is_int) {
    t.int_data.reserve(values.size());
    for (double v : values) t.int_data.push_back(SaturatingInt64(v));
  } else {
    t.data.reserve(values.size());
    for (double v : values) t.data.push_back(static_cast<float>(v));
  }
  return t;
}

std::vector<double> HostValues(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.NumElements()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = ElementAt(t, static_cast<std::int64_t>(i));
  return out;
}

Dims DenseStrides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

double ElementAt(const Tensor& t, std::int64_t i) {
  return IsInt64(t) ? static_cast<double>(t.int_data[static_cast<std::size_t>(i)]) : t.data[static_cast<std::size_t>(i)];
}

std::int64_t BroadcastIndex(std::int64_t i, const Dims& out, const Dims& in) {
  // From the last dim on: i's coordinate along out's dim, and in's stride
  // there (in's dims align with out's last ones). No allocation: the host
  // evaluator calls this once per element.
  std::int64_t idx = 0, stride = 1;
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = out.size(); d-- > 0;) {
    const std::int64_t coord = i % out[d];
    i /= out[d];
    if (d < lead) continue;
    const std::int64_t n = in[d - lead];
    if (n != 1) idx += coord * stride;
    stride *= n;
  }
  return idx;
}

namespace {

// in's stride along each of out's dims: 0 where in has no such dim or
// broadcasts a 1 along it.
Dims BroadcastStrides(const Dims& out, const Dims& in) {
  const std::size_t lead = out.size() - in.size();
  Dims stride(out.size(), 0);
  for (std::int64_t d = static_cast<std::int64_t>(out.size()) - 1, s = 1; d >= static_cast<std::int64_t>(lead); --d) {
    const std::int64_t n = in[static_cast<std::size_t>(d) - lead];
    if (n != 1) stride[static_cast<std::size_t>(d)] = s;
    s *= n;
  }
  return stride;
}

// Calls visit(offset) for each index of out's dims [0, dims) in order, with
// the offset in the input that `stride` (BroadcastStrides) reads: an
// odometer, the last of those dims turning fastest.
template <typename Visit>
void ForEachBroadcastOffset(const Dims& out, std::size_t dims, const Dims& stride, Visit visit) {
  const std::int64_t count = Product(Dims(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(dims)));
  Dims coord(dims, 0);
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    visit(at);
    for (std::size_t d = dims; d-- > 0;) {
      at += stride[d];
      if (++coord[d] < out[d]) break;
      at -= stride[d] * out[d];
      coord[d] = 0;
    }
  }
}

template <typename T>
void BroadcastBlocks(const std::vector<T>& from, const Dims& in, std::vector<T>& to, const Dims& out) {
  const std::size_t rank = out.size();
  const Dims padded = ExpandRank(in, rank);
  std::size_t split = rank;  // dims [split, rank): all equal to out's, or all 1
  while (split > 0 && padded[split - 1] == out[split - 1]) --split;
  const bool fill = split == rank;
  if (fill)
    while (split > 0 && padded[split - 1] == 1) --split;
  const auto block = static_cast<std::size_t>(Product(Dims(out.begin() + static_cast<std::ptrdiff_t>(split), out.end())));
  to.reserve(static_cast<std::size_t>(Product(out)));
  if (block == 0) return;
  ForEachBroadcastOffset(out, split, BroadcastStrides(out, in), [&](std::int64_t at) {
    if (fill) to.insert(to.end(), block, from[static_cast<std::size_t>(at)]);
    else to.insert(to.end(), from.begin() + at, from.begin() + at + static_cast<std::ptrdiff_t>(block));
  });
}

}  // namespace

std::vector<std::int64_t> BroadcastOffsets(const Dims& out, const Dims& in) {
  std::vector<std::int64_t> offsets;
  offsets.reserve(static_cast<std::size_t>(Product(out)));
  ForEachBroadcastOffset(out, out.size(), BroadcastStrides(out, in), [&](std::int64_t at) { offsets.push_back(at); });
  return offsets;
}

Tensor BroadcastAsStored(const Tensor& t, const Dims& out) {
  Tensor r;
  r.elem_type = t.elem_type, r.data_type = t.data_type, r.dims = out;
  if (IsInt64(t)) BroadcastBlocks(t.int_data, t.dims, r.int_data, out);
  else BroadcastBlocks(t.data, t.dims, r.data, out);
  return r;
}

std::vector<std::int64_t> AsInts(const Tensor& t) {
  if (IsInt64(t)) return t.int_data;
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < t.NumElements(); ++i) out.push_back(SaturatingInt64(ElementAt(t, i)));
  return out;
}

void NarrowTo(Tensor& t, std::int32_t data_type) {
  using onnx::TensorProto;
  const std::int32_t storage = StorageTypeOf(data_type);
  if (storage == TensorProto::INT64 && !IsInt64(t)) {
    for (float x : t.data) t.int_data.push_back(SaturatingInt64(std::trunc(static_cast<double>(x))));
    t.data.clear();
  } else if (storage == TensorProto::FLOAT && IsInt64(t)) {
    for (std::int64_t x : t.int_data) t.data.push_back(static_cast<float>(x));
    t.int_data.clear();
  }
  t.elem_type = storage;
  t.data_type = data_type;
  switch (data_type) {
    case TensorProto::INT32: for (auto& x : t.int_data) x = static_cast<std::int32_t>(x); break;
    case TensorProto::INT16: for (auto& x : t.int_data) x = static_cast<std::int16_t>(x); break;
    case TensorProto::INT8: for (auto& x : t.int_data) x = static_cast<std::int8_t>(x); break;
    case TensorProto::UINT32: for (auto& x : t.int_data) x = static_cast<std::uint32_t>(x); break;
    case TensorProto::UINT16: for (auto& x : t.int_data) x = static_cast<std::uint16_t>(x); break;
    case TensorProto::UINT8: for (auto& x : t.int_data) x = static_cast<std::uint8_t>(x); break;
    case TensorProto::BOOL: for (auto& x : t.int_data) x = x != 0; break;
    case TensorProto::FLOAT16: for (auto& x : t.data) x = HalfToFloat(FloatToHalf(x)); break;
    default: break;  // INT64, UINT64 (held as int64 bits), FLOAT, DOUBLE (held as float)
  }
}

Tensor CastToElemType(const Tensor& t, std::int32_t to, const std::string& where) {
  if (StorageTypeOf(to) == onnx::TensorProto::UNDEFINED)
    throw Error(ErrorKind::kUnsupported, where + ": element type " + std::to_string(to) + " is not supported");
  Tensor out = t;
  if (to == onnx::TensorProto::BOOL && !IsInt64(t)) {  // x != 0 on the value itself, before any truncation
    out.elem_type = onnx::TensorProto::INT64;
    for (float x : t.data) out.int_data.push_back(x != 0);
    out.data.clear();
  }
  NarrowTo(out, to);
  return out;
}

}  // namespace onnxfuse::eval
