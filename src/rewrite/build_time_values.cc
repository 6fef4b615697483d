#include "rewrite/build_time_values.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "ir/attributes.h"
#include "ir/tensor_values.h"

namespace onnxfuse {

namespace {

using Known = std::optional<KnownTensor>;

// Exporters' condition chains are a handful of nodes deep; the bound keeps a
// hostile chain from recursing without end.
constexpr int kMaxDepth = 64;

std::int64_t Count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

bool IsInteger(std::int32_t t) {
  return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 || t == onnx::TensorProto::INT16 ||
         t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8 || t == onnx::TensorProto::UINT16 ||
         t == onnx::TensorProto::UINT32 || t == onnx::TensorProto::UINT64;
}

// The number as an element of type `t` holds it (Cast's conversion).
double Convert(double v, std::int32_t t) {
  if (t == onnx::TensorProto::BOOL) return v != 0 ? 1 : 0;
  if (IsInteger(t)) return std::trunc(v);
  if (t == onnx::TensorProto::FLOAT) return static_cast<double>(static_cast<float>(v));
  return v;
}

Known FromTensor(const onnx::TensorProto& t) {
  std::vector<std::int64_t> dims(t.dims().begin(), t.dims().end());
  if (std::any_of(dims.begin(), dims.end(), [](auto d) { return d < 0; }) || Count(dims) > kMaxKnownElements)
    return std::nullopt;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::DOUBLE: case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::INT64: case onnx::TensorProto::INT32: case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL:
      return KnownTensor{t.data_type(), dims, DecodeTensor<double>(t, "constant '" + t.name() + "'")};
    default:
      return std::nullopt;
  }
}

// A Constant node's value_int(s) / value_float(s) forms (opset 12+).
Known FromConstantAttributes(const Node& node) {
  for (const auto& a : node.proto.attribute()) {
    if (a.name() == "value_int") return KnownTensor{onnx::TensorProto::INT64, {}, {static_cast<double>(a.i())}};
    if (a.name() == "value_float") return KnownTensor{onnx::TensorProto::FLOAT, {}, {static_cast<double>(a.f())}};
    if (a.name() == "value_ints" && a.ints_size() <= kMaxKnownElements)
      return KnownTensor{onnx::TensorProto::INT64, {a.ints_size()}, {a.ints().begin(), a.ints().end()}};
    if (a.name() == "value_floats" && a.floats_size() <= kMaxKnownElements)
      return KnownTensor{onnx::TensorProto::FLOAT, {a.floats_size()}, {a.floats().begin(), a.floats().end()}};
  }
  return std::nullopt;
}

// Elementwise over two operands of the same shape, or one of them a single
// element (ONNX's multidirectional broadcasting, restricted to those cases).
Known Binary(const KnownTensor& a, const KnownTensor& b, std::int32_t out_type,
             const std::function<double(double, double)>& f) {
  const std::size_t na = a.values.size(), nb = b.values.size();
  const std::size_t rank = std::max(a.dims.size(), b.dims.size());
  auto padded = [&](const std::vector<std::int64_t>& dims) {
    std::vector<std::int64_t> p(rank - dims.size(), 1);
    p.insert(p.end(), dims.begin(), dims.end());
    return p;
  };
  const auto da = padded(a.dims), db = padded(b.dims);
  if (na != 1 && nb != 1 && da != db) return std::nullopt;
  KnownTensor r{out_type, na == 1 ? db : da, {}};
  if (na == 1 && nb == 1) r.dims = std::vector<std::int64_t>(rank, 1);
  const std::size_t n = std::max(na, nb);
  for (std::size_t i = 0; i < n; ++i) r.values.push_back(Convert(f(a.values[na == 1 ? 0 : i], b.values[nb == 1 ? 0 : i]), out_type));
  return r;
}

Known Unary(KnownTensor a, const std::function<double(double)>& f) {
  for (auto& v : a.values) v = Convert(f(v), a.elem_type);
  return a;
}

class Evaluator {
 public:
  explicit Evaluator(const Graph& graph) : graph_(graph) {}

  Known Value(ValueId id, int depth) {
    if (id == kNoValue || depth > kMaxDepth) return std::nullopt;
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    Known result = Compute(id, depth);
    memo_[id] = result;
    return result;
  }

 private:
  Known Compute(ValueId id, int depth) {
    const onnxfuse::Value& value = graph_.value(id);
    if (const onnx::TensorProto* t = graph_.ConstantTensor(id)) return FromTensor(*t);
    if (value.producer == kNoNode) return std::nullopt;
    const Node& node = graph_.node(value.producer);
    if (!node.domain.empty()) return std::nullopt;
    const std::string& op = node.op_type;
    if (op == "Constant") return FromConstantAttributes(node);
    if (op == "Shape" || op == "Size") return ShapeOf(node);
    auto in = [&](std::size_t i) -> Known {
      return i < node.num_explicit_inputs ? Value(node.inputs[i], depth + 1) : std::nullopt;
    };
    if (op == "Gather") return Gather(node, depth);
    Known a = in(0);
    if (!a) return std::nullopt;
    if (op == "Identity") return a;
    if (op == "Squeeze" || op == "Unsqueeze" || op == "Reshape") return Retyped(*a, value);
    if (op == "Cast") {
      const auto to = static_cast<std::int32_t>(AttrInt(node, "to", 0));
      a->elem_type = to;
      return Unary(*a, [](double v) { return v; });
    }
    if (op == "Not") return Unary(*a, [](double v) { return v == 0 ? 1.0 : 0.0; });
    if (op == "Neg") return Unary(*a, [](double v) { return -v; });
    if (op == "Abs") return Unary(*a, [](double v) { return std::fabs(v); });
    if (op == "Ceil") return Unary(*a, [](double v) { return std::ceil(v); });
    if (op == "Floor") return Unary(*a, [](double v) { return std::floor(v); });
    if (op == "Relu") return Unary(*a, [](double v) { return std::max(v, 0.0); });
    if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMin" || op == "ReduceMax") return Reduce(node, *a);
    if (op == "Concat") return Concat(node, depth);
    Known b = in(1);
    if (!b) return std::nullopt;
    static const std::map<std::string, std::function<double(double, double)>> kCompare = {
        {"Equal", [](double x, double y) { return x == y ? 1.0 : 0.0; }},
        {"Less", [](double x, double y) { return x < y ? 1.0 : 0.0; }},
        {"Greater", [](double x, double y) { return x > y ? 1.0 : 0.0; }},
        {"LessOrEqual", [](double x, double y) { return x <= y ? 1.0 : 0.0; }},
        {"GreaterOrEqual", [](double x, double y) { return x >= y ? 1.0 : 0.0; }},
        {"And", [](double x, double y) { return x != 0 && y != 0 ? 1.0 : 0.0; }},
        {"Or", [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; }},
        {"Xor", [](double x, double y) { return (x != 0) != (y != 0) ? 1.0 : 0.0; }}};
    if (auto it = kCompare.find(op); it != kCompare.end()) return Binary(*a, *b, onnx::TensorProto::BOOL, it->second);
    static const std::map<std::string, std::function<double(double, double)>> kArithmetic = {
        {"Add", [](double x, double y) { return x + y; }},
        {"Sub", [](double x, double y) { return x - y; }},
        {"Mul", [](double x, double y) { return x * y; }},
        {"Min", [](double x, double y) { return std::min(x, y); }},
        {"Max", [](double x, double y) { return std::max(x, y); }}};
    if (auto it = kArithmetic.find(op); it != kArithmetic.end() && node.num_explicit_inputs == 2)
      return Binary(*a, *b, a->elem_type, it->second);
    if (op == "Div") {
      if (IsInteger(a->elem_type) && std::any_of(b->values.begin(), b->values.end(), [](double v) { return v == 0; }))
        return std::nullopt;  // integer division by zero is undefined; leave it to run time
      return Binary(*a, *b, a->elem_type, [](double x, double y) { return x / y; });
    }
    return std::nullopt;
  }

  // Size of a value whose shape inference fixed every dim, or its Shape where
  // the dims it gives are fixed (opset 15's start/end clamp like Slice's).
  Known ShapeOf(const Node& node) {
    if (node.inputs.empty() || node.inputs[0] == kNoValue) return std::nullopt;
    const TensorType& type = graph_.value(node.inputs[0]).type;
    if (!type.has_shape) return std::nullopt;
    auto known = [&](std::int64_t from, std::int64_t to) {
      return std::all_of(type.dims.begin() + from, type.dims.begin() + to, [](auto d) { return d >= 0; });
    };
    if (node.op_type == "Size") {
      if (!known(0, static_cast<std::int64_t>(type.dims.size()))) return std::nullopt;
      return KnownTensor{onnx::TensorProto::INT64, {}, {static_cast<double>(Count(type.dims))}};
    }
    const auto rank = static_cast<std::int64_t>(type.dims.size());
    auto clamp = [&](std::int64_t i) { return std::clamp(i < 0 ? i + rank : i, std::int64_t{0}, rank); };
    const std::int64_t start = clamp(AttrInt(node, "start", 0)), end = clamp(AttrInt(node, "end", rank));
    if (start < end && !known(start, end)) return std::nullopt;
    KnownTensor r{onnx::TensorProto::INT64, {std::max<std::int64_t>(end - start, 0)}, {}};
    for (std::int64_t i = start; i < end; ++i) r.values.push_back(static_cast<double>(type.dims[static_cast<std::size_t>(i)]));
    return r;
  }

  // Squeeze / Unsqueeze / Reshape keep the elements; the dims are those shape inference gave the output.
  static Known Retyped(KnownTensor a, const onnxfuse::Value& out) {
    if (!out.type.has_shape || Count(out.type.dims) != static_cast<std::int64_t>(a.values.size())) return std::nullopt;
    a.dims = out.type.dims;
    return a;
  }

  // Gather along axis 0 of a 1-D tensor: the form of shape arithmetic. From a
  // Shape, the dims it picks must be known, not all of them (x.size(1) of an
  // input whose batch and spatial dims are symbolic).
  Known Gather(const Node& node, int depth) {
    if (node.num_explicit_inputs != 2 || AttrInt(node, "axis", 0) != 0) return std::nullopt;
    Known indices = Value(node.inputs[1], depth + 1);
    Known data = Value(node.inputs[0], depth + 1);
    if (!data) data = PartialShape(node.inputs[0]);
    if (!indices || !data || data->dims.size() != 1) return std::nullopt;
    const auto n = static_cast<double>(data->dims[0]);
    KnownTensor r{data->elem_type, indices->dims, {}};
    for (double i : indices->values) {
      if (i < -n || i >= n) return std::nullopt;
      const double picked = data->values[static_cast<std::size_t>(i < 0 ? i + n : i)];
      if (picked < 0) return std::nullopt;  // an unknown dim of a partial shape
      r.values.push_back(picked);
    }
    return r;
  }

  // The output of a Shape node (no start/end) with -1 for the dims shape inference left unknown.
  Known PartialShape(ValueId id) {
    const ValueId v = id;
    if (v == kNoValue || graph_.value(v).producer == kNoNode) return std::nullopt;
    const Node& shape = graph_.node(graph_.value(v).producer);
    if (shape.op_type != "Shape" || !shape.domain.empty() || FindAttr(shape, "start") || FindAttr(shape, "end") ||
        shape.inputs.empty() || shape.inputs[0] == kNoValue)
      return std::nullopt;
    const TensorType& type = graph_.value(shape.inputs[0]).type;
    if (!type.has_shape) return std::nullopt;
    KnownTensor r{onnx::TensorProto::INT64, {static_cast<std::int64_t>(type.dims.size())}, {}};
    for (auto d : type.dims) r.values.push_back(d < 0 ? -1.0 : static_cast<double>(d));
    return r;
  }

  Known Concat(const Node& node, int depth) {
    KnownTensor r;
    for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
      Known part = Value(node.inputs[i], depth + 1);
      if (!part || part->dims.size() != 1) return std::nullopt;
      r.elem_type = part->elem_type;
      r.values.insert(r.values.end(), part->values.begin(), part->values.end());
    }
    r.dims = {static_cast<std::int64_t>(r.values.size())};
    return r;
  }

  // Over all axes only (no `axes` attribute or input), keepdims as the output's type says.
  static Known Reduce(const Node& node, const KnownTensor& a) {
    if (node.num_explicit_inputs > 1 || FindAttr(node, "axes") || a.values.empty()) return std::nullopt;
    double r = a.values[0];
    for (std::size_t i = 1; i < a.values.size(); ++i) {
      double v = a.values[i];
      if (node.op_type == "ReduceProd") r *= v;
      else if (node.op_type == "ReduceSum") r += v;
      else if (node.op_type == "ReduceMin") r = std::min(r, v);
      else r = std::max(r, v);
    }
    const bool keepdims = AttrInt(node, "keepdims", 1) != 0;
    return KnownTensor{a.elem_type, keepdims ? std::vector<std::int64_t>(a.dims.size(), 1) : std::vector<std::int64_t>{}, {r}};
  }

  const Graph& graph_;
  std::map<ValueId, Known> memo_;
};

}  // namespace

std::optional<KnownTensor> KnownValue(const Graph& graph, ValueId value) { return Evaluator(graph).Value(value, 0); }

std::optional<double> KnownScalar(const Graph& graph, ValueId value) {
  auto known = KnownValue(graph, value);
  if (!known || known->values.size() != 1) return std::nullopt;
  return known->values[0];
}

}  // namespace onnxfuse
