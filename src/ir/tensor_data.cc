// Tensor data against its declared type and dims (see src/ir/tensor_data.h).
#include "ir/tensor_data.h"

#include <limits>

#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

using onnx::TensorProto;

std::string DimsString(const TensorProto& t) {
  std::string s = "[";
  for (int i = 0; i < t.dims_size(); ++i) s += (i ? "," : "") + std::to_string(t.dims(i));
  return s + "]";
}

std::string TypeName(std::int32_t type) {
  if (TensorProto::DataType_IsValid(type)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
  return "type " + std::to_string(type);
}

// The typed field that holds a tensor of `type` (onnx.proto's comments on each
// field), and how many of its entries make one element.
enum class Field { kFloat, kInt32, kString, kInt64, kDouble, kUint64, kNone };

Field FieldOf(std::int32_t type, int* per_element) {
  *per_element = 1;
  switch (type) {
    case TensorProto::FLOAT: return Field::kFloat;
    case TensorProto::COMPLEX64: *per_element = 2; return Field::kFloat;
    case TensorProto::INT32: case TensorProto::INT16: case TensorProto::INT8: case TensorProto::UINT16:
    case TensorProto::UINT8: case TensorProto::BOOL: case TensorProto::FLOAT16: case TensorProto::BFLOAT16:
      return Field::kInt32;
    case TensorProto::STRING: return Field::kString;
    case TensorProto::INT64: return Field::kInt64;
    case TensorProto::DOUBLE: return Field::kDouble;
    case TensorProto::COMPLEX128: *per_element = 2; return Field::kDouble;
    case TensorProto::UINT32: case TensorProto::UINT64: return Field::kUint64;
    default: return Field::kNone;
  }
}

const char* FieldName(Field f) {
  switch (f) {
    case Field::kFloat: return "float_data";
    case Field::kInt32: return "int32_data";
    case Field::kString: return "string_data";
    case Field::kInt64: return "int64_data";
    case Field::kDouble: return "double_data";
    case Field::kUint64: return "uint64_data";
    default: return "no field";
  }
}

std::int64_t FieldSize(const TensorProto& t, Field f) {
  switch (f) {
    case Field::kFloat: return t.float_data_size();
    case Field::kInt32: return t.int32_data_size();
    case Field::kString: return t.string_data_size();
    case Field::kInt64: return t.int64_data_size();
    case Field::kDouble: return t.double_data_size();
    case Field::kUint64: return t.uint64_data_size();
    default: return 0;
  }
}

}  // namespace

std::int64_t ElementBytes(std::int32_t data_type) {
  switch (data_type) {
    case TensorProto::FLOAT: case TensorProto::INT32: case TensorProto::UINT32: return 4;
    case TensorProto::DOUBLE: case TensorProto::INT64: case TensorProto::UINT64: case TensorProto::COMPLEX64: return 8;
    case TensorProto::FLOAT16: case TensorProto::BFLOAT16: case TensorProto::INT16: case TensorProto::UINT16: return 2;
    case TensorProto::INT8: case TensorProto::UINT8: case TensorProto::BOOL: return 1;
    case TensorProto::COMPLEX128: return 16;
    default: return 0;
  }
}

std::optional<std::int64_t> CheckedMultiply(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

std::optional<std::int64_t> CheckedElementCount(const google::protobuf::RepeatedField<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    auto next = CheckedMultiply(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<std::int64_t> TensorDataBytes(const TensorProto& tensor) {
  const std::int64_t width = ElementBytes(tensor.data_type());
  auto n = CheckedElementCount(tensor.dims());
  if (width == 0 || !n) return std::nullopt;
  return CheckedMultiply(*n, width);
}

void ValidateTensorData(const TensorProto& t, const std::string& what, const std::string& source) {
  const std::string label = source + ": " + what + " (" + TypeName(t.data_type()) + ", dims " + DimsString(t) + ")";
  auto fail = [&](const std::string& why) { throw Error(ErrorKind::kInvalidModel, label + " " + why); };
  int per_element = 1;
  const Field field = FieldOf(t.data_type(), &per_element);
  if (field == Field::kNone) fail("has no valid data type");
  if (t.has_segment()) throw Error(ErrorKind::kUnsupported, label + " is segmented, which onnx-fuse does not support");
  const auto n = CheckedElementCount(t.dims());
  if (!n) fail("has a negative dim or more elements than fit in 64 bits");
  const std::int64_t width = ElementBytes(t.data_type());
  const auto bytes = width ? CheckedMultiply(*n, width) : std::optional<std::int64_t>(0);
  if (!bytes) fail("would need more than 2^63 bytes");
  if (t.data_location() == TensorProto::EXTERNAL) fail("still points to external data");

  int typed_fields = 0;
  for (Field f : {Field::kFloat, Field::kInt32, Field::kString, Field::kInt64, Field::kDouble, Field::kUint64}) {
    if (FieldSize(t, f) == 0) continue;
    ++typed_fields;
    if (f != field) fail("holds " + std::string(FieldName(f)) + ", but a tensor of its type is stored in " + FieldName(field));
  }
  const bool raw = !t.raw_data().empty() || (t.has_raw_data() && typed_fields == 0);
  if (raw && typed_fields) fail("holds both raw_data and " + std::string(FieldName(field)));
  if (raw) {
    if (width == 0) fail("holds raw_data, which a tensor of its type cannot use");
    const auto size = static_cast<std::int64_t>(t.raw_data().size());
    if (size != *bytes)
      fail("has " + std::to_string(size) + " bytes of raw_data, but its dims need " + std::to_string(*bytes) + " bytes");
    return;
  }
  const std::int64_t want = *n * per_element;  // n <= bytes / width, so no overflow
  if (FieldSize(t, field) != want)
    fail("holds " + std::to_string(FieldSize(t, field)) + " values in " + FieldName(field) + ", but its dims need " +
         std::to_string(want));
}

void ForEachTensor(onnx::GraphProto& graph,
                   const std::function<void(onnx::TensorProto& tensor, const std::string& what)>& visit) {
  for (auto& t : *graph.mutable_initializer()) visit(t, "initializer '" + t.name() + "'");
  for (int i = 0; i < graph.node_size(); ++i) {
    auto& node = *graph.mutable_node(i);
    for (auto& attr : *node.mutable_attribute()) {
      const std::string what = "attribute '" + attr.name() + "' of " + NodeLabel(node, i);
      if (attr.has_t()) visit(*attr.mutable_t(), what);
      for (auto& t : *attr.mutable_tensors()) visit(t, what);
      if (attr.has_g()) ForEachTensor(*attr.mutable_g(), visit);
      for (auto& g : *attr.mutable_graphs()) ForEachTensor(g, visit);
    }
  }
}

}  // namespace onnxfuse
