// Reference implementations of ONNX ops on host tensors (semantics from the
// ONNX operator spec, opsets 7-17): the builder's constant folding, and the
// runtime's host steps. This unit holds the dispatcher and the basic ops; the
// op families are in host_eval_*.cc (host_eval_ops.h).
#include "eval/host_eval.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "eval/host_eval_layout.h"
#include "eval/host_eval_sample.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/dims.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

std::int64_t NormAxis(std::int64_t axis, std::size_t rank, const Node& node) {
  std::int64_t r = static_cast<std::int64_t>(rank);
  if (axis < -std::max<std::int64_t>(r, 1) || axis >= std::max<std::int64_t>(r, 1))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + std::max<std::int64_t>(r, 1) : axis;
}

void InvalidNode(const Node& node, const std::string& why) {
  throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": " + why);
}

const Tensor& NeedInput(const Node& node, const HostInputs& in, std::size_t i) {
  if (i >= in.size() || !in[i])
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": missing input " + std::to_string(i));
  return *in[i];
}

namespace {

Tensor ConstantValue(const Node& node) {
  for (const auto& attr : node.proto.attribute()) {
    if (attr.name() == "value") return TensorFromProto(attr.t(), NodeLabel(node));
    if (attr.name() == "value_float") return MakeHostTensor(false, {}, {attr.f()});
    if (attr.name() == "value_int") return MakeHostTensor(true, {}, {static_cast<double>(attr.i())});
    if (attr.name() == "value_floats")
      return MakeHostTensor(false, {attr.floats_size()}, std::vector<double>(attr.floats().begin(), attr.floats().end()));
    if (attr.name() == "value_ints")
      return MakeHostTensor(true, {attr.ints_size()}, std::vector<double>(attr.ints().begin(), attr.ints().end()));
  }
  throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": Constant without a supported value attribute");
}

// Integer operands in int64, exactly (a double loses them beyond 2^53): Add,
// Sub and Mul wrap as two's complement, Div truncates toward zero (C++ and
// the spec's integer division), Pow multiplies out a non-negative exponent.
std::int64_t IntBinary(const Node& node, std::int64_t x, std::int64_t y) {
  const std::string& op = node.op_type;
  auto wrap = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  const auto ux = static_cast<std::uint64_t>(x), uy = static_cast<std::uint64_t>(y);
  if (op == "Add") return wrap(ux + uy);
  if (op == "Sub") return wrap(ux - uy);
  if (op == "Mul") return wrap(ux * uy);
  if (op == "Div") {
    if (y == 0) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": integer division by zero");
    return y == -1 ? wrap(0 - ux) : x / y;  // INT64_MIN / -1 wraps instead of trapping
  }
  if (op == "Pow") {
    if (y < 0) return SaturatingInt64(std::trunc(std::pow(static_cast<double>(x), static_cast<double>(y))));
    std::uint64_t r = 1, base = ux;  // by squaring, modulo 2^64 like the multiplications above
    for (auto e = static_cast<std::uint64_t>(y); e != 0; e >>= 1, base *= base)
      if (e & 1) r *= base;
    return wrap(r);
  }
  if (op == "Equal") return x == y;
  if (op == "Less") return x < y;
  if (op == "Greater") return x > y;
  if (op == "GreaterOrEqual") return x >= y;
  if (op == "LessOrEqual") return x <= y;
  if (op == "And") return x != 0 && y != 0;
  return x != 0 || y != 0;  // Or
}

// The float arithmetic and comparisons of Binary, decided once per node
// rather than per element.
double (*FloatBinary(const std::string& op))(double, double) {
  static const std::map<std::string, double (*)(double, double)> kOps = {
      {"Add", [](double x, double y) { return x + y; }},
      {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }},
      {"Div", [](double x, double y) { return x / y; }},
      {"Pow", [](double x, double y) { return std::pow(x, y); }},
      {"Equal", [](double x, double y) { return double(x == y); }},
      {"Less", [](double x, double y) { return double(x < y); }},
      {"Greater", [](double x, double y) { return double(x > y); }},
      {"GreaterOrEqual", [](double x, double y) { return double(x >= y); }},
      {"LessOrEqual", [](double x, double y) { return double(x <= y); }},
      {"And", [](double x, double y) { return double(x != 0 && y != 0); }},
      {"Or", [](double x, double y) { return double(x != 0 || y != 0); }}};
  auto it = kOps.find(op);
  return it == kOps.end() ? [](double, double) { return 0.0; } : it->second;
}

// Where each element of `out` reads an input of `dims`: empty when it reads
// element i itself (the same dims) or element 0 (a single element), else
// BroadcastOffsets.
struct BroadcastReader {
  bool same, single;
  std::vector<std::int64_t> offsets;
  BroadcastReader(const Dims& out, const Tensor& t)
      : same(t.dims == out), single(t.NumElements() == 1), offsets(same || single ? std::vector<std::int64_t>{}
                                                                                : BroadcastOffsets(out, t.dims)) {}
  std::int64_t operator()(std::size_t i) const {
    return same ? static_cast<std::int64_t>(i) : single ? 0 : offsets[i];
  }
};

// Multidirectional broadcasting (ONNX Broadcasting.md). The result is INT64
// for comparisons, And and Or (bool, 0/1) and for integer operands; Pow takes
// the type of its base (Pow-12: T for X, T1 for Y).
Tensor Binary(const Node& node, const Tensor& a, const Tensor& b) {
  Dims out = BroadcastDims(a.dims, b.dims);
  const std::string& op = node.op_type;
  const bool is_bool_out = op == "Equal" || op == "Less" || op == "Greater" || op == "GreaterOrEqual" ||
                           op == "LessOrEqual" || op == "And" || op == "Or";
  const bool int_math = IsInt64(a) && IsInt64(b);
  Tensor r;
  r.dims = out;
  r.elem_type = int_math || is_bool_out || (op == "Pow" && IsInt64(a)) ? onnx::TensorProto::INT64
                                                                        : onnx::TensorProto::FLOAT;
  const auto n = static_cast<std::size_t>(Product(out));
  const BroadcastReader read_a(out, a), read_b(out, b);
  const auto apply = FloatBinary(op);
  if (r.elem_type == onnx::TensorProto::INT64) r.int_data.reserve(n);
  else r.data.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t ia = read_a(i), ib = read_b(i);
    if (int_math) {
      const std::int64_t x = a.int_data[static_cast<std::size_t>(ia)], y = b.int_data[static_cast<std::size_t>(ib)];
      r.int_data.push_back(IntBinary(node, x, y));
      continue;
    }
    const double v = apply(ElementAt(a, ia), ElementAt(b, ib));
    if (r.elem_type == onnx::TensorProto::INT64)
      r.int_data.push_back(std::isfinite(v) ? SaturatingInt64(std::trunc(v)) : 0);
    else
      r.data.push_back(static_cast<float>(v));
  }
  return r;
}

std::vector<std::int64_t> AxesOf(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  if (opset >= 13 && in.size() > 1 && in[1]) return AsInts(*in[1]);
  return AttrInts(node, "axes");
}

Tensor Slice(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const Tensor& x = *in[0];
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = AttrInts(node, "starts"), ends = AttrInts(node, "ends"), axes = AttrInts(node, "axes");
  } else {
    starts = AsInts(*in.at(1)), ends = AsInts(*in.at(2));
    if (in.size() > 3 && in[3]) axes = AsInts(*in[3]);
    if (in.size() > 4 && in[4]) steps = AsInts(*in[4]);
  }
  std::size_t rank = x.dims.size();
  std::vector<std::int64_t> begin(rank, 0), step(rank, 1), out_dims = x.dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    auto axis = static_cast<std::size_t>(NormAxis(axes.empty() ? static_cast<std::int64_t>(k) : axes[k], rank, node));
    std::int64_t n = x.dims[axis], s = steps.empty() ? 1 : steps[k];
    if (s == 0) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": step 0");
    std::int64_t b = starts[k] < 0 ? starts[k] + n : starts[k], e = ends[k] < 0 ? ends[k] + n : ends[k];
    if (s > 0) b = std::clamp<std::int64_t>(b, 0, n), e = std::clamp<std::int64_t>(e, 0, n);
    else b = std::clamp<std::int64_t>(b, 0, n - 1), e = std::clamp<std::int64_t>(e, -1, n - 1);
    begin[axis] = b, step[axis] = s;
    out_dims[axis] = s > 0 ? std::max<std::int64_t>(0, (e - b + s - 1) / s) : std::max<std::int64_t>(0, (b - e - s - 1) / -s);
  }
  Dims is = DenseStrides(x.dims), os = DenseStrides(out_dims);
  std::vector<double> values(static_cast<std::size_t>(Product(out_dims)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d)
      src += (begin[d] + (static_cast<std::int64_t>(i) / os[d] % out_dims[d]) * step[d]) * is[d];
    values[i] = ElementAt(x, src);
  }
  return MakeHostTensor(IsInt64(x), out_dims, values);
}

Tensor Gather(const Node& node, const Tensor& x, const Tensor& indices) {
  auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), x.dims.size(), node));
  GatherExtents e = GatherExtentsOf(x.dims, axis, indices.dims);
  const std::int64_t outer = e.outer, n = e.n, inner = e.inner;
  auto idx = AsInts(indices);
  for (auto k : idx)
    if (k < -n || k >= n) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": index out of range");
  // Whole rows of `inner` elements, copied as stored (int64 values exactly).
  const auto gather = [&](const auto& from, auto& to) {
    to.reserve(static_cast<std::size_t>(outer * static_cast<std::int64_t>(idx.size()) * inner));
    for (std::int64_t o = 0; o < outer; ++o)
      for (auto k : idx) {
        const auto row = from.begin() + static_cast<std::ptrdiff_t>((o * n + (k < 0 ? k + n : k)) * inner);
        to.insert(to.end(), row, row + static_cast<std::ptrdiff_t>(inner));
      }
  };
  Tensor t;
  t.elem_type = IsInt64(x) ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT;
  t.dims = std::move(e.out);
  if (IsInt64(x)) gather(x.int_data, t.int_data);
  else gather(x.data, t.data);
  return t;
}

}  // namespace

Dims ReshapeDims(const Node& node, const Dims& in, const std::vector<std::int64_t>& shape) {
  bool allow_zero = AttrInt(node, "allowzero", 0) != 0;
  Dims out;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) out.push_back(i < in.size() ? in[i] : 0);
    else if (shape[i] == -1) infer = static_cast<int>(i), out.push_back(1);
    else out.push_back(shape[i]);
  }
  if (infer >= 0) out[static_cast<std::size_t>(infer)] = Product(in) / std::max<std::int64_t>(Product(out), 1);
  if (Product(out) != Product(in))
    throw Error(ErrorKind::kInvalidModel,
                NodeLabel(node) + ": cannot reshape " + DimsString(in) + " to " + DimsString(out));
  return out;
}

bool DropoutDrops(const Tensor* ratio, const Tensor* training_mode) {
  const bool training = training_mode && training_mode->NumElements() > 0 && ElementAt(*training_mode, 0) != 0;
  const double drop = ratio && ratio->NumElements() > 0 ? ElementAt(*ratio, 0) : 0.5;
  return training && drop != 0;
}

bool HostEvaluable(const Node& node) {
  static const std::unordered_set<std::string> kOps = {
      // this unit
      "Constant", "Identity", "Dropout", "Cast", "CastLike", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape",
      "Flatten", "Slice", "Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater",
      "GreaterOrEqual", "LessOrEqual", "And", "Or", "Where", "ConstantOfShape", "Range",
      // host_eval_reduce.cc
      "ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
      "ReduceLogSumExp", "ReduceLogSum",
      // host_eval_math.cc
      "Sqrt", "Neg", "Abs", "Ceil", "Floor", "Round", "Exp", "Log", "Reciprocal", "Sign", "Not", "Erf", "Sin", "Cos",
      "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Relu", "Sigmoid", "Tanh", "Softplus",
      "Softsign", "Mish", "HardSigmoid", "HardSwish", "Elu", "Selu", "LeakyRelu", "ThresholdedRelu", "Celu", "IsNaN",
      "IsInf", "Mod", "BitShift", "Xor", "Min", "Max", "Sum", "Mean", "Clip",
      // host_eval_axis.cc
      "ArgMax", "ArgMin", "TopK", "Hardmax", "Softmax", "LogSoftmax", "CumSum", "Trilu",
      // host_eval_index.cc
      "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "OneHot", "Compress",
      "ReverseSequence", "NonZero",
      // host_eval_tensor.cc, host_eval_einsum.cc
      "LpNormalization", "MeanVarianceNormalization", "Shape", "Size", "EyeLike", "Det", "Einsum",
      // host_eval_matmul.cc, host_eval_quantize.cc
      "MatMul", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul",
      "ConvInteger", "QLinearConv",
      // host_eval_detection.cc, host_eval_unique.cc
      "NonMaxSuppression", "Unique"};
  if (!node.domain.empty()) return false;
  return kOps.count(node.op_type) > 0 || IsHostLayoutOp(node.op_type) ||  // host_eval_layout.cc: Split, Pad, Transpose, Expand, Tile
         IsHostSampleOp(node.op_type);  // host_eval_sample.cc, host_eval_window.cc
}

namespace {

// The ops of this unit: constants, views and shape arithmetic, binary and
// unary elementwise math, Reduce*.
std::vector<Tensor> EvalBasicOp(const Node& node, const HostInputs& in, std::int64_t opset) {
  const std::string& op = node.op_type;
  auto need = [&](std::size_t i) -> const Tensor& { return NeedInput(node, in, i); };
  if (op == "Constant") return One(ConstantValue(node));
  if (op == "Dropout" && DropoutDrops(in.size() > 1 ? in[1] : nullptr, in.size() > 2 ? in[2] : nullptr))
    throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": training_mode is true and ratio above 0: random dropping "
                                                         "(training) is not supported");
  if (op == "Identity") return One(need(0));
  if (op == "Dropout") {  // the identity, and a mask of all true (BOOL, held as int64 ones)
    Tensor mask;
    mask.elem_type = onnx::TensorProto::INT64, mask.data_type = onnx::TensorProto::BOOL, mask.dims = need(0).dims;
    mask.int_data.assign(static_cast<std::size_t>(need(0).NumElements()), 1);
    return {need(0), mask};
  }
  if (op == "Cast")  // Cast-6 and later: `to` is required
    return One(CastToElemType(need(0), static_cast<std::int32_t>(AttrInt(node, "to", onnx::TensorProto::UNDEFINED)),
                           NodeLabel(node)));
  if (op == "CastLike")  // to target_type's type: exact where the tensor carries it, else its storage type
    return One(CastToElemType(need(0), need(1).DataType(), NodeLabel(node)));
  if (op == "Gather") return One(Gather(node, need(0), need(1)));
  if (op == "Unsqueeze" || op == "Squeeze") {
    Tensor t = need(0);
    auto axes = AxesOf(node, in, opset);
    if (op == "Unsqueeze") {
      std::size_t rank = t.dims.size() + axes.size();
      for (auto& a : axes) a = NormAxis(a, rank, node);
      std::sort(axes.begin(), axes.end());
      for (auto a : axes) t.dims.insert(t.dims.begin() + a, 1);
    } else {
      Dims out;
      for (std::size_t d = 0; d < t.dims.size(); ++d) {
        bool listed = axes.empty() ? t.dims[d] == 1 : false;
        for (auto a : axes) listed |= NormAxis(a, t.dims.size(), node) == static_cast<std::int64_t>(d);
        if (!listed) out.push_back(t.dims[d]);
      }
      t.dims = out;
    }
    return One(std::move(t));
  }
  if (op == "Concat") {
    const Tensor& first = need(0);
    auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), first.dims.size(), node));
    Dims out = first.dims;
    out[axis] = 0;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (need(k).elem_type != first.elem_type) InvalidNode(node, "inputs of different element types");
      out[axis] += need(k).dims[axis];
    }
    const std::int64_t outer = Product(Dims(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(axis)));
    Tensor t;
    t.elem_type = first.elem_type, t.data_type = first.data_type, t.dims = out;
    // Each input's rows of `chunk` elements in turn, row by row: copies in the storage type.
    auto concat = [&](auto field) {
      auto& values = t.*field;
      values.reserve(static_cast<std::size_t>(Product(out)));
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::size_t k = 0; k < in.size(); ++k) {
          const auto& from = need(k).*field;
          const auto chunk = static_cast<std::ptrdiff_t>(from.size()) / static_cast<std::ptrdiff_t>(std::max<std::int64_t>(outer, 1));
          values.insert(values.end(), from.begin() + o * chunk, from.begin() + (o + 1) * chunk);
        }
    };
    if (IsInt64(first)) concat(&Tensor::int_data);
    else concat(&Tensor::data);
    return One(std::move(t));
  }
  if (op == "Reshape") {
    Tensor t = need(0);
    t.dims = ReshapeDims(node, t.dims, AsInts(need(1)));
    return One(std::move(t));
  }
  if (op == "Flatten") {
    Tensor t = need(0);
    std::int64_t axis = AttrInt(node, "axis", 1);  // in [-r, r]: a negative one counts from r
    if (axis < 0) axis += static_cast<std::int64_t>(t.dims.size());
    axis = NormAxis(axis, t.dims.size() + 1, node);
    std::int64_t outer = Product(Dims(t.dims.begin(), t.dims.begin() + axis));
    t.dims = {outer, t.NumElements() / std::max<std::int64_t>(outer, 1)};
    return One(std::move(t));
  }
  if (op == "Slice") return One(Slice(node, in, opset));
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" || op == "Less" ||
      op == "Greater" || op == "GreaterOrEqual" || op == "LessOrEqual" || op == "And" || op == "Or")
    return One(Binary(node, need(0), need(1)));
  if (op == "Where") {  // elements copied as stored: int64 exactly
    const Tensor &c = need(0), &x = need(1), &y = need(2);
    Dims out = BroadcastDims(BroadcastDims(c.dims, x.dims), y.dims);
    const std::vector<std::int64_t> at_c = BroadcastOffsets(out, c.dims), at_x = BroadcastOffsets(out, x.dims),
                                    at_y = BroadcastOffsets(out, y.dims);
    auto chosen = [&](std::size_t i) { return ElementAt(c, at_c[i]) != 0; };
    Tensor t;
    t.dims = out;
    if (IsInt64(x) && IsInt64(y)) {
      t.elem_type = onnx::TensorProto::INT64, t.data_type = x.data_type;
      t.int_data.resize(at_c.size());
      for (std::size_t i = 0; i < at_c.size(); ++i)
        t.int_data[i] = chosen(i) ? x.int_data[std::size_t(at_x[i])] : y.int_data[std::size_t(at_y[i])];
    } else {
      t.elem_type = onnx::TensorProto::FLOAT;
      if (!IsInt64(x) && !IsInt64(y) && x.data_type == y.data_type) t.data_type = x.data_type;
      t.data.resize(at_c.size());
      for (std::size_t i = 0; i < at_c.size(); ++i)
        t.data[i] = static_cast<float>(chosen(i) ? ElementAt(x, at_x[i]) : ElementAt(y, at_y[i]));
    }
    return One(std::move(t));
  }
  if (op == "ConstantOfShape") {
    Dims out = AsInts(need(0));
    const auto* attr = FindAttr(node, "value");
    Tensor v = attr ? TensorFromProto(attr->t(), NodeLabel(node)) : MakeHostTensor(false, {1}, {0.0});
    return One(MakeHostTensor(IsInt64(v), out, std::vector<double>(static_cast<std::size_t>(Product(out)), ElementAt(v, 0))));
  }
  if (op == "Range") {
    double start = ElementAt(need(0), 0), limit = ElementAt(need(1), 0), delta = ElementAt(need(2), 0);
    auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
    std::vector<double> values;
    for (std::int64_t i = 0; i < n; ++i) values.push_back(start + static_cast<double>(i) * delta);
    return One(MakeHostTensor(IsInt64(need(0)), {n}, values));
  }
  throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": cannot be evaluated on the host");
}

}  // namespace

std::vector<Tensor> EvalOnHost(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  try {
    if (!node.domain.empty())
      throw Error(ErrorKind::kUnsupported,
                  NodeLabel(node) + ": domain '" + node.domain + "' cannot be evaluated on the host");
    // Most nodes a compile evaluates are Constants (236 of 320 in a small
    // BERT's compile at each new length): taken before the families' tests.
    if (node.op_type == "Constant") return One(ConstantValue(node));
    for (auto* eval : {EvalReduceOp, EvalAxisOp, EvalIndexOp, EvalMathOp, EvalTensorOp, EvalEinsum, EvalMatMul, EvalQuantizeOp, EvalLayoutOp,
                       EvalSampleOp, EvalDetectionOp, EvalUniqueOp})
      if (HostOutputs family = eval(node, in, opset)) return std::move(*family);
    return EvalBasicOp(node, in, opset);
  } catch (const std::invalid_argument& e) {  // BroadcastDims: shapes that do not broadcast
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": " + e.what());
  }
}

std::vector<Tensor> EvalAsDeclared(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> outputs = EvalOnHost(node, inputs, graph.opset());
  for (std::size_t k = 0; k < outputs.size() && k < node.outputs.size(); ++k) {
    if (node.outputs[k] == kNoValue) continue;
    const std::int32_t type = graph.value(node.outputs[k]).type.elem_type;
    if (StorageTypeOf(type) != onnx::TensorProto::UNDEFINED) NarrowTo(outputs[k], type);
  }
  return outputs;
}

}  // namespace onnxfuse::eval
