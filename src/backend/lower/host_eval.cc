// Reference implementations of the ops the builder folds at build time
// (semantics from the ONNX operator spec, opsets 7-17).
#include "backend/lower/host_eval.h"
#include "backend/lower/host_tensor.h"
#include "backend/lower/host_eval_layout.h"
#include "backend/lower/host_eval_sample.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "backend/lower/dnnl_util.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

std::int64_t NormAxis(std::int64_t axis, std::size_t rank, const Node& node) {
  std::int64_t r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= std::max<std::int64_t>(r, 1))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + r : axis;
}

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

Tensor Binary(const Node& node, const Tensor& a, const Tensor& b) {
  Dims out = BroadcastDims(a.dims, b.dims);
  const std::string& op = node.op_type;
  bool is_int = IsInt64(a) && IsInt64(b) && op != "Pow";
  bool is_bool_out = op == "Equal" || op == "Less" || op == "Greater" || op == "GreaterOrEqual" ||
                     op == "LessOrEqual" || op == "And" || op == "Or";
  std::vector<double> values(static_cast<std::size_t>(Product(out)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    double x = ElementAt(a, BroadcastIndex(static_cast<std::int64_t>(i), out, a.dims));
    double y = ElementAt(b, BroadcastIndex(static_cast<std::int64_t>(i), out, b.dims));
    double r = 0;
    if (op == "Add") r = x + y;
    else if (op == "Sub") r = x - y;
    else if (op == "Mul") r = x * y;
    else if (op == "Div") r = is_int ? std::trunc(x / y) : x / y;
    else if (op == "Pow") r = std::pow(x, y);
    else if (op == "Equal") r = x == y;
    else if (op == "Less") r = x < y;
    else if (op == "Greater") r = x > y;
    else if (op == "GreaterOrEqual") r = x >= y;
    else if (op == "LessOrEqual") r = x <= y;
    else if (op == "And") r = x != 0 && y != 0;
    else if (op == "Or") r = x != 0 || y != 0;
    else if (op == "Min") r = std::min(x, y);
    else if (op == "Max") r = std::max(x, y);
    values[i] = r;
  }
  return MakeHostTensor(is_int || is_bool_out, out, values);
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
  Dims out(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims.end());
  std::int64_t outer = Product(Dims(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis)));
  std::int64_t inner = Product(Dims(x.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims.end()));
  std::int64_t n = x.dims[axis];
  auto idx = AsInts(indices);
  std::vector<double> values;
  for (std::int64_t o = 0; o < outer; ++o)
    for (auto k : idx) {
      if (k < -n || k >= n) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": index out of range");
      std::int64_t j = k < 0 ? k + n : k;
      for (std::int64_t i = 0; i < inner; ++i) values.push_back(ElementAt(x, (o * n + j) * inner + i));
    }
  return MakeHostTensor(IsInt64(x), out, values);
}

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

// Reduce* (ONNX Operators.md: ReduceMax/Min/Sum/Mean/Prod/L1/L2/SumSquare/
// LogSumExp): axes from the attribute, or from input 1 where the op takes it
// (ReduceSum from 13); keepdims (default 1); no axes reduces all, unless
// noop_with_empty_axes.
Tensor Reduce(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in.at(0);
  const std::string& op = node.op_type;
  std::vector<std::int64_t> axes = in.size() > 1 && in[1] ? AsInts(*in[1]) : AttrInts(node, "axes");
  if (axes.empty() && AttrInt(node, "noop_with_empty_axes", 0)) return x;
  std::vector<bool> reduced(x.dims.size(), axes.empty());
  for (auto a : axes) reduced[static_cast<std::size_t>(NormAxis(a, x.dims.size(), node))] = true;
  Dims out, kept;
  for (std::size_t d = 0; d < x.dims.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : x.dims[d]);
    if (!reduced[d] || AttrInt(node, "keepdims", 1)) out.push_back(kept.back());
  }
  const std::int64_t n = Product(kept);
  const double count = static_cast<double>(x.NumElements()) / static_cast<double>(std::max<std::int64_t>(n, 1));
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin", is_prod = op == "ReduceProd";
  const double init = is_max ? -INFINITY : is_min ? INFINITY : is_prod ? 1.0 : 0.0;
  std::vector<double> acc(static_cast<std::size_t>(n), init);
  const Dims in_strides = DenseStrides(x.dims), kept_strides = DenseStrides(kept);
  for (std::int64_t i = 0; i < x.NumElements(); ++i) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < x.dims.size(); ++d)
      if (!reduced[d]) k += (i / in_strides[d] % x.dims[d]) * kept_strides[d];
    double v = ElementAt(x, i), &a = acc[static_cast<std::size_t>(k)];
    if (is_max) a = std::max(a, v);
    else if (is_min) a = std::min(a, v);
    else if (is_prod) a *= v;
    else if (op == "ReduceL1") a += std::abs(v);
    else if (op == "ReduceL2" || op == "ReduceSumSquare") a += v * v;
    else if (op == "ReduceLogSumExp") a += std::exp(v);
    else a += v;  // ReduceSum, ReduceMean
  }
  for (auto& a : acc) {
    if (op == "ReduceMean") a /= count;
    else if (op == "ReduceL2") a = std::sqrt(a);
    else if (op == "ReduceLogSumExp") a = std::log(a);
  }
  return MakeHostTensor(IsInt64(x), out, acc);
}

// Elementwise unary ops on known tensors (ONNX Operators.md); Round rounds
// half to even, as the spec says.
double Unary(const std::string& op, double x) {
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Neg") return -x;
  if (op == "Abs") return std::abs(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Floor") return std::floor(x);
  if (op == "Round") return std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Reciprocal") return 1.0 / x;
  if (op == "Relu") return std::max(x, 0.0);
  if (op == "Sign") return static_cast<double>((x > 0) - (x < 0));
  return x == 0 ? 1.0 : 0.0;  // Not
}

}  // namespace

bool DropoutDrops(const Tensor* ratio, const Tensor* training_mode) {
  const bool training = training_mode && training_mode->NumElements() > 0 && ElementAt(*training_mode, 0) != 0;
  const double drop = ratio && ratio->NumElements() > 0 ? ElementAt(*ratio, 0) : 0.5;
  return training && drop != 0;
}

bool HostEvaluable(const Node& node) {
  static const char* kOps[] = {"Constant", "Identity", "Cast",  "Gather", "Unsqueeze", "Squeeze", "Concat",
                               "Reshape",  "Flatten",  "Slice", "Add",    "Sub",       "Mul",     "Div",
                               "Pow",      "Sqrt",     "Neg",   "Equal",  "Less",      "Greater", "Where",
                               "Expand",   "ConstantOfShape", "Range", "Transpose", "Dropout", "Abs", "Ceil",
                               "Floor", "Round", "Exp", "Log", "Reciprocal", "Relu", "Sign", "Not", "Min", "Max",
                               "GreaterOrEqual", "LessOrEqual", "And", "Or", "ReduceMax", "ReduceMin", "ReduceSum",
                               "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                               "ReduceLogSumExp", "Tile"};
  if (!node.domain.empty()) return false;
  if (IsHostLayoutOp(node.op_type)) return true;
  if (IsHostSampleOp(node.op_type)) return true;
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return node.op_type == op; });
}

std::vector<Tensor> EvalOnHost(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const std::string& op = node.op_type;
  auto need = [&](std::size_t i) -> const Tensor& {
    if (i >= in.size() || !in[i]) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": missing input");
    return *in[i];
  };
  if (op == "Constant") return {ConstantValue(node)};
  if (op == "Dropout" && DropoutDrops(in.size() > 1 ? in[1] : nullptr, in.size() > 2 ? in[2] : nullptr))
    throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": training_mode is true and ratio above 0: random dropping "
                                                         "(training) is not supported");
  if (op == "Identity") return {need(0)};
  if (op == "Dropout") {  // the identity, and a mask of all true (BOOL, held as int64 ones)
    Tensor mask;
    mask.elem_type = onnx::TensorProto::INT64, mask.data_type = onnx::TensorProto::BOOL, mask.dims = need(0).dims;
    mask.int_data.assign(static_cast<std::size_t>(need(0).NumElements()), 1);
    return {need(0), mask};
  }
  if (op == "Cast") {
    auto to = AttrInt(node, "to", onnx::TensorProto::FLOAT);
    bool is_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE || to == onnx::TensorProto::FLOAT16;
    auto v = HostValues(need(0));
    if (!is_float) for (auto& x : v) x = std::trunc(x);
    return {MakeHostTensor(!is_float, need(0).dims, v)};
  }
  if (op == "Gather") return {Gather(node, need(0), need(1))};
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
    return {t};
  }
  if (op == "Concat") {
    const Tensor& first = need(0);
    auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), first.dims.size(), node));
    Dims out = first.dims;
    out[axis] = 0;
    bool is_int = true;
    for (std::size_t k = 0; k < in.size(); ++k) out[axis] += need(k).dims[axis], is_int &= IsInt64(need(k));
    std::int64_t outer = Product(Dims(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(axis)));
    std::vector<double> values;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::size_t k = 0; k < in.size(); ++k) {
        std::int64_t chunk = Product(Dims(need(k).dims.begin() + static_cast<std::ptrdiff_t>(axis), need(k).dims.end()));
        for (std::int64_t i = 0; i < chunk; ++i) values.push_back(ElementAt(need(k), o * chunk + i));
      }
    return {MakeHostTensor(is_int, out, values)};
  }
  if (op == "Reshape") {
    Tensor t = need(0);
    t.dims = ReshapeDims(node, t.dims, AsInts(need(1)));
    return {t};
  }
  if (op == "Flatten") {
    Tensor t = need(0);
    std::int64_t axis = AttrInt(node, "axis", 1);  // in [-r, r]: a negative one counts from r
    if (axis < 0) axis += static_cast<std::int64_t>(t.dims.size());
    axis = NormAxis(axis, t.dims.size() + 1, node);
    std::int64_t outer = Product(Dims(t.dims.begin(), t.dims.begin() + axis));
    t.dims = {outer, t.NumElements() / std::max<std::int64_t>(outer, 1)};
    return {t};
  }
  if (op == "Slice") return {Slice(node, in, opset)};
  if (op == "Transpose") {
    const Tensor& x = need(0);
    auto perm = AttrInts(node, "perm");
    if (perm.empty())
      for (std::size_t d = x.dims.size(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
    Dims out, is = DenseStrides(x.dims);
    for (auto p : perm) out.push_back(x.dims[static_cast<std::size_t>(p)]);
    Dims os = DenseStrides(out);
    std::vector<double> values(static_cast<std::size_t>(Product(out)));
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::int64_t src = 0;
      for (std::size_t d = 0; d < out.size(); ++d)
        src += (static_cast<std::int64_t>(i) / os[d] % out[d]) * is[static_cast<std::size_t>(perm[d])];
      values[i] = ElementAt(x, src);
    }
    return {MakeHostTensor(IsInt64(x), out, values)};
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" || op == "Less" ||
      op == "Greater" || op == "GreaterOrEqual" || op == "LessOrEqual" || op == "And" || op == "Or")
    return {Binary(node, need(0), need(1))};
  if (op == "Sqrt" || op == "Neg" || op == "Abs" || op == "Ceil" || op == "Floor" || op == "Round" || op == "Exp" ||
      op == "Log" || op == "Reciprocal" || op == "Relu" || op == "Sign" || op == "Not") {
    auto v = HostValues(need(0));
    for (auto& x : v) x = Unary(op, x);
    return {MakeHostTensor(IsInt64(need(0)) || op == "Not", need(0).dims, v)};
  }
  if (op.rfind("Reduce", 0) == 0) return {Reduce(node, in)};
  if (op == "Min" || op == "Max") {  // variadic, broadcast (ONNX Operators.md, Max-13): pairwise
    Tensor acc = need(0);
    for (std::size_t k = 1; k < in.size(); ++k) acc = Binary(node, acc, need(k));
    return {acc};
  }
  if (op == "Where") {
    const Tensor &c = need(0), &x = need(1), &y = need(2);
    Dims out = BroadcastDims(BroadcastDims(c.dims, x.dims), y.dims);
    std::vector<double> values(static_cast<std::size_t>(Product(out)));
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto k = static_cast<std::int64_t>(i);
      values[i] = ElementAt(c, BroadcastIndex(k, out, c.dims)) != 0 ? ElementAt(x, BroadcastIndex(k, out, x.dims))
                                                                    : ElementAt(y, BroadcastIndex(k, out, y.dims));
    }
    return {MakeHostTensor(IsInt64(x) && IsInt64(y), out, values)};
  }
  if (op == "Expand") {
    const Tensor& x = need(0);
    Dims out = BroadcastDims(x.dims, AsInts(need(1)));
    std::vector<double> values(static_cast<std::size_t>(Product(out)));
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = ElementAt(x, BroadcastIndex(static_cast<std::int64_t>(i), out, x.dims));
    return {MakeHostTensor(IsInt64(x), out, values)};
  }
  if (op == "Tile") {  // ONNX Operators.md, Tile-13: dim d repeated repeats[d] times
    const Tensor& x = need(0);
    const auto repeats = AsInts(need(1));
    if (repeats.size() != x.dims.size())
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": repeats has " + std::to_string(repeats.size()) +
                                                " values for an input of rank " + std::to_string(x.dims.size()));
    Dims out;
    for (std::size_t d = 0; d < x.dims.size(); ++d) out.push_back(x.dims[d] * repeats[d]);
    const Dims os = DenseStrides(out), is = DenseStrides(x.dims);
    std::vector<double> values(static_cast<std::size_t>(Product(out)));
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::int64_t src = 0;
      for (std::size_t d = 0; d < out.size(); ++d) src += (static_cast<std::int64_t>(i) / os[d] % out[d] % x.dims[d]) * is[d];
      values[i] = ElementAt(x, src);
    }
    return {MakeHostTensor(IsInt64(x), out, values)};
  }
  if (op == "ConstantOfShape") {
    Dims out = AsInts(need(0));
    const auto* attr = FindAttr(node, "value");
    Tensor v = attr ? TensorFromProto(attr->t(), NodeLabel(node)) : MakeHostTensor(false, {1}, {0.0});
    return {MakeHostTensor(IsInt64(v), out, std::vector<double>(static_cast<std::size_t>(Product(out)), ElementAt(v, 0)))};
  }
  if (op == "Range") {
    double start = ElementAt(need(0), 0), limit = ElementAt(need(1), 0), delta = ElementAt(need(2), 0);
    auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
    std::vector<double> values;
    for (std::int64_t i = 0; i < n; ++i) values.push_back(start + static_cast<double>(i) * delta);
    return {MakeHostTensor(IsInt64(need(0)), {n}, values)};
  }
  if (auto outputs = EvalLayoutOp(node, in, opset)) return *outputs;
  if (auto outputs = EvalSampleOp(node, in, opset)) return *outputs;
  throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": cannot be evaluated at build time");
}

}  // namespace onnxfuse::backend
