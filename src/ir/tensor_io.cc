// Host tensors <-> TensorProto files (see src/ir/tensor_io.h).
#include "ir/tensor_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace fs = std::filesystem;

namespace {

// mulberry32 (Tommy Ettinger), as in scripts/ort/compare.js.
class Mulberry32 {
 public:
  explicit Mulberry32(std::uint32_t seed) : state_(seed) {}
  double Next() {
    state_ += 0x6d2b79f5u;
    std::uint32_t t = (state_ ^ (state_ >> 15)) * (1u | state_);
    t = (t + (t ^ (t >> 7)) * (61u | t)) ^ t;
    return static_cast<double>(t ^ (t >> 14)) / 4294967296.0;
  }

 private:
  std::uint32_t state_;
};

std::string DimsString(const std::vector<std::int64_t>& dims) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < dims.size(); ++i) out << (i ? "," : "") << dims[i];
  out << ']';
  return out.str();
}

}  // namespace

std::int32_t StorageTypeOf(std::int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::DOUBLE: return onnx::TensorProto::FLOAT;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: return onnx::TensorProto::INT64;
    default: return onnx::TensorProto::UNDEFINED;
  }
}

std::int64_t Tensor::NumElements() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& where) {
  Tensor t;
  t.name = proto.name();
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  t.data_type = proto.data_type();
  if (StorageTypeOf(proto.data_type()) == onnx::TensorProto::FLOAT) {
    t.elem_type = onnx::TensorProto::FLOAT;
    t.data = DecodeTensor<float>(proto, where);
  } else {  // integer types, and the refusal of any other type
    t.elem_type = onnx::TensorProto::INT64;
    t.int_data = DecodeTensor<std::int64_t>(proto, where);
    if (t.data_type == onnx::TensorProto::BOOL)
      for (auto& v : t.int_data) v = v != 0;
  }
  return t;
}

onnx::ValueInfoProto TensorValueInfo(const std::string& name, std::int32_t elem_type,
                                     const std::vector<std::int64_t>* dims) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(elem_type);
  if (dims) {
    auto* shape = tensor_type->mutable_shape();
    for (std::int64_t d : *dims) shape->add_dim()->set_dim_value(d);
  }
  return info;
}

onnx::TensorProto TensorToProto(const Tensor& tensor) {
  const std::int32_t type = tensor.DataType();
  Check(StorageTypeOf(type) == tensor.elem_type, "TensorToProto: data_type does not match the storage type");
  if (tensor.elem_type == onnx::TensorProto::INT64) return EncodeIntTensor(tensor.name, type, tensor.dims, tensor.int_data);
  return EncodeTensor(tensor.name, type, tensor.dims, std::vector<double>(tensor.data.begin(), tensor.data.end()));
}

Tensor ReadTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, path + ": cannot open: " + std::strerror(errno));
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) throw Error(ErrorKind::kInvalidModel, path + ": not a serialized TensorProto");
  return TensorFromProto(proto, path);
}

void WriteTensorFile(const std::string& path, const Tensor& tensor) {
  WriteTextAtomically(path, TensorToProto(tensor).SerializeAsString());
}

std::vector<Tensor> ReadTensorDir(const std::string& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int i = 0;; ++i) {
    fs::path file = fs::path(dir) / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    tensors.push_back(ReadTensorFile(file.string()));
  }
  if (tensors.empty()) throw Error(ErrorKind::kIo, dir + ": no " + prefix + "_0.pb");
  return tensors;
}

void WriteTensorDir(const std::string& dir, const std::vector<Tensor>& tensors, const std::string& prefix) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::kIo, dir + ": cannot create: " + ec.message());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    WriteTensorFile((fs::path(dir) / (prefix + "_" + std::to_string(i) + ".pb")).string(), tensors[i]);
}

std::vector<Tensor> MatchInputs(const Graph& graph, std::vector<Tensor> tensors) {
  const auto& inputs = graph.inputs();
  if (tensors.size() != inputs.size())
    throw Error(ErrorKind::kUsage, "the model has " + std::to_string(inputs.size()) + " inputs, got " +
                                       std::to_string(tensors.size()) + " tensors");
  std::set<std::string> names;
  for (ValueId v : inputs) names.insert(graph.value(v).name);
  bool by_name = std::all_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return names.count(t.name); });
  std::vector<Tensor> ordered(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Value& value = graph.value(inputs[i]);
    std::size_t from = i;
    if (by_name)
      from = static_cast<std::size_t>(
          std::find_if(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.name == value.name; }) -
          tensors.begin());
    Tensor t = std::move(tensors[from]);
    const auto& type = value.type;
    if (StorageTypeOf(type.elem_type) != t.elem_type)
      throw Error(ErrorKind::kUsage, "input '" + value.name + "': tensor '" + t.name + "' has the wrong element type");
    bool dims_ok = !type.has_shape || type.dims.size() == t.dims.size();
    for (std::size_t d = 0; dims_ok && type.has_shape && d < t.dims.size(); ++d)
      dims_ok = type.dims[d] < 0 || type.dims[d] == t.dims[d];
    if (!dims_ok)
      throw Error(ErrorKind::kUsage, "input '" + value.name + "' is " + type.ShapeString() + ", tensor '" + t.name +
                                         "' is " + DimsString(t.dims) + " (pin symbolic dims with --input-shape)");
    t.name = value.name;
    t.data_type = type.elem_type;  // a float32 file fed to a float16 input, or int64 to int32: the model's type
    ordered[i] = std::move(t);
  }
  return ordered;
}

std::vector<Tensor> RandomInputs(const Graph& graph) {
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value& value = graph.value(graph.inputs()[i]);
    Tensor t;
    t.name = value.name;
    for (auto d : value.type.dims) t.dims.push_back(d >= 0 ? d : 1);
    t.data_type = value.type.elem_type;
    Mulberry32 next(static_cast<std::uint32_t>(i + 1));
    if (StorageTypeOf(t.data_type) == onnx::TensorProto::INT64) {
      t.elem_type = onnx::TensorProto::INT64;
      t.int_data.resize(static_cast<std::size_t>(t.NumElements()));
      const bool is_bool = t.data_type == onnx::TensorProto::BOOL;
      for (auto& x : t.int_data) x = is_bool ? next.Next() < 0.5 : static_cast<std::int64_t>(next.Next() * 4);
    } else {
      t.data.resize(static_cast<std::size_t>(t.NumElements()));
      for (auto& x : t.data) x = static_cast<float>(next.Next() * 2 - 1);
      if (t.data_type == onnx::TensorProto::FLOAT16)
        for (auto& x : t.data) x = HalfToFloat(FloatToHalf(x));  // the value a float16 input can hold
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

TensorDiff CompareTensors(const Tensor& reference, const Tensor& candidate) {
  TensorDiff diff;
  if (reference.dims != candidate.dims || reference.elem_type != candidate.elem_type) {
    diff.shape_mismatch = true;
    diff.max_abs = diff.max_rel = INFINITY;
    return diff;
  }
  double max_ref = 0;
  // Non-finite values must match exactly (NaN with NaN, +inf with +inf) and
  // stay out of the scale: an infinity in max |reference| would make every
  // finite difference of the tensor compare as 0.
  auto visit = [&](double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
      bool same = std::isnan(a) ? std::isnan(b) : a == b;
      if (!same) diff.max_abs = INFINITY;
      return;
    }
    diff.max_abs = std::max(diff.max_abs, std::fabs(a - b));
    max_ref = std::max(max_ref, std::fabs(a));
  };
  for (std::size_t i = 0; i < reference.data.size(); ++i) visit(reference.data[i], candidate.data[i]);
  for (std::size_t i = 0; i < reference.int_data.size(); ++i)
    visit(static_cast<double>(reference.int_data[i]), static_cast<double>(candidate.int_data[i]));
  diff.max_rel = max_ref > 0 ? diff.max_abs / max_ref : (diff.max_abs > 0 ? INFINITY : 0);
  return diff;
}

}  // namespace onnxfuse
