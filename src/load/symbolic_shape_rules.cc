#include "load/symbolic_shape_rules.h"

#include <algorithm>
#include <set>

#include "eval/host_eval.h"
#include "ir/attributes.h"

namespace onnxfuse {

namespace {

using Dim = SymbolicDim;
using Dims = SymbolicDims;

bool IsOne(const Dim& d) { return d.symbol.empty() && d.value == 1; }
bool Known(const Dim& d) { return d.symbol.empty(); }

std::int64_t Axis(std::int64_t axis, std::size_t rank) { return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis; }
bool InRank(std::int64_t axis, std::size_t rank) { return axis >= 0 && axis < static_cast<std::int64_t>(rank); }

// The ops whose first output has their first input's dims. (DynamicQuantizeLinear's
// other two outputs are scalars: static dims, the same at every input shape.)
bool KeepsShape(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Identity", "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor",
      "Ceil", "Round", "Sign", "Not", "Cast", "CastLike", "Softmax", "LogSoftmax", "Hardmax", "Elu", "Selu",
      "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Celu", "ThresholdedRelu", "Clip", "IsNaN",
      "IsInf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Mish",
      "Shrink", "LpNormalization", "Dropout", "LayerNormalization", "InstanceNormalization",
      "BatchNormalization", "MeanVarianceNormalization", "Gelu", "DynamicQuantizeLinear"};
  return kOps.count(op) > 0;
}

bool BroadcastsElementwise(const std::string& op) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor",
                                             "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                             "Where", "Max", "Min", "Sum", "Mean", "BitShift", "PRelu"};
  return kOps.count(op) > 0;
}

bool IsReduction(const std::string& op) {
  static const std::set<std::string> kOps = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                             "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                             "ReduceSumSquare", "ArgMax", "ArgMin"};
  return kOps.count(op) > 0;
}

// ONNX Broadcasting.md, multidirectional, where it holds at every value of
// the symbols: each dim 1 or the same dim.
std::optional<Dims> Broadcast(const std::vector<Dims>& inputs) {
  std::size_t rank = 0;
  for (const Dims& d : inputs) rank = std::max(rank, d.size());
  Dims out(rank, Dim{1, ""});
  for (const Dims& d : inputs)
    for (std::size_t i = 0; i < d.size(); ++i) {
      Dim& o = out[rank - d.size() + i];
      if (IsOne(d[i])) continue;
      if (IsOne(o)) o = d[i];
      else if (!(o == d[i])) return std::nullopt;
    }
  return out;
}

std::optional<Dims> MatMul(const std::vector<Dims>& in) {
  if (in.size() < 2 || in[0].empty() || in[1].empty()) return std::nullopt;
  Dims a = in[0], b = in[1];
  const bool row = a.size() == 1, column = b.size() == 1;
  if (row) a.insert(a.begin(), Dim{1, ""});
  if (column) b.push_back(Dim{1, ""});
  if (!(a.back() == b[b.size() - 2])) return std::nullopt;
  std::optional<Dims> out = Broadcast({Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)});
  if (!out) return std::nullopt;
  if (!row) out->push_back(a[a.size() - 2]);
  if (!column) out->push_back(b.back());
  return out;
}

std::optional<Dims> Gemm(const Node& node, const std::vector<Dims>& in) {
  if (in.size() < 2 || in[0].size() != 2 || in[1].size() != 2) return std::nullopt;
  const bool ta = AttrInt(node, "transA", 0) != 0, tb = AttrInt(node, "transB", 0) != 0;
  const Dim m = in[0][ta ? 1 : 0], k = in[0][ta ? 0 : 1], k2 = in[1][tb ? 1 : 0], n = in[1][tb ? 0 : 1];
  if (!(k == k2)) return std::nullopt;
  const Dims out = {m, n};
  if (in.size() > 2 && !in[2].empty()) {  // C broadcasts to [M, N] one way
    const std::optional<Dims> c = Broadcast({out, in[2]});
    if (!c || !(*c == out)) return std::nullopt;
  }
  return out;
}

std::optional<Dims> Transpose(const Node& node, const Dims& in) {
  std::vector<std::int64_t> perm = AttrInts(node, "perm");
  if (perm.empty())
    for (std::size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  if (perm.size() != in.size()) return std::nullopt;
  Dims out;
  for (std::int64_t p : perm) {
    if (!InRank(p, in.size())) return std::nullopt;
    out.push_back(in[static_cast<std::size_t>(p)]);
  }
  return out;
}

std::optional<Dims> Gather(const Node& node, const std::vector<Dims>& in) {
  const std::int64_t axis = Axis(AttrInt(node, "axis", 0), in[0].size());
  if (in.size() < 2 || !InRank(axis, in[0].size())) return std::nullopt;
  Dims out(in[0].begin(), in[0].begin() + axis);
  out.insert(out.end(), in[1].begin(), in[1].end());
  out.insert(out.end(), in[0].begin() + axis + 1, in[0].end());
  return out;
}

std::optional<Dims> Unsqueeze(const Dims& in, const std::vector<std::int64_t>& axes) {
  const std::size_t rank = in.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (std::int64_t a : axes) {
    const std::int64_t at = Axis(a, rank);
    if (!InRank(at, rank) || inserted[static_cast<std::size_t>(at)]) return std::nullopt;
    inserted[static_cast<std::size_t>(at)] = true;
  }
  Dims out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? Dim{1, ""} : in[next++]);
  return out;
}

std::optional<Dims> Squeeze(const Dims& in, const std::vector<std::int64_t>& axes) {
  std::vector<bool> removed(in.size(), false);
  for (std::int64_t a : axes) {
    const std::int64_t at = Axis(a, in.size());
    if (!InRank(at, in.size()) || !IsOne(in[static_cast<std::size_t>(at)])) return std::nullopt;
    removed[static_cast<std::size_t>(at)] = true;
  }
  Dims out;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!removed[i]) out.push_back(in[i]);
  return out;
}

std::optional<Dims> Concat(const std::vector<Dims>& in, std::int64_t axis_attr) {
  if (in.empty()) return std::nullopt;
  const std::int64_t axis = Axis(axis_attr, in[0].size());
  if (!InRank(axis, in[0].size())) return std::nullopt;
  Dims out = in[0];
  const auto a = static_cast<std::size_t>(axis);
  if (!Known(out[a])) return std::nullopt;
  for (std::size_t k = 1; k < in.size(); ++k) {
    if (in[k].size() != out.size() || !Known(in[k][a])) return std::nullopt;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (i != a && !(in[k][i] == out[i])) return std::nullopt;
    out[a].value += in[k][a].value;
  }
  return out;
}

// [product before axis, product from axis]: representable when each
// product has at most one symbol and no other factor.
std::optional<Dims> Flatten(const Dims& in, std::int64_t axis) {
  if (axis < 0 || axis > static_cast<std::int64_t>(in.size())) return std::nullopt;
  const auto product = [](Dims::const_iterator begin, Dims::const_iterator end) -> std::optional<Dim> {
    Dim p{1, ""};
    for (auto it = begin; it != end; ++it) {
      if (Known(*it)) p.value *= it->value;
      else if (p.symbol.empty()) p.symbol = it->symbol;
      else return std::nullopt;
    }
    if (!p.symbol.empty() && p.value != 1) return std::nullopt;
    if (!p.symbol.empty()) p.value = 0;
    return p;
  };
  const std::optional<Dim> left = product(in.begin(), in.begin() + axis), right = product(in.begin() + axis, in.end());
  if (!left || !right) return std::nullopt;
  return Dims{*left, *right};
}

std::optional<Dims> Reduce(const Node& node, const std::vector<Dims>& in, const ConstantInts& ints) {
  std::vector<std::int64_t> axes;
  if (node.op_type == "ArgMax" || node.op_type == "ArgMin") {
    axes = {AttrInt(node, "axis", 0)};
  } else if (FindAttr(node, "axes")) {
    axes = AttrInts(node, "axes");
  } else if (in.size() > 1 && !in[1].empty()) {
    const std::optional<std::vector<std::int64_t>> given = ints(node, 1);
    if (!given) return std::nullopt;
    axes = *given;
  }
  if (axes.empty() && AttrInt(node, "noop_with_empty_axes", 0) != 0) return in[0];
  const bool keep = AttrInt(node, "keepdims", 1) != 0;
  std::vector<bool> reduced(in[0].size(), axes.empty());
  for (std::int64_t a : axes) {
    const std::int64_t at = Axis(a, in[0].size());
    if (!InRank(at, in[0].size())) return std::nullopt;
    reduced[static_cast<std::size_t>(at)] = true;
  }
  Dims out;
  for (std::size_t i = 0; i < in[0].size(); ++i) {
    if (!reduced[i]) out.push_back(in[0][i]);
    else if (keep) out.push_back(Dim{1, ""});
  }
  return out;
}

}  // namespace

bool AllKnown(const SymbolicDims& dims) { return std::all_of(dims.begin(), dims.end(), Known); }

std::optional<SymbolicDims> RuleOutputDims(const Node& node, const std::vector<SymbolicDims>& in,
                                           const ConstantInts& ints, std::string* why) {
  const auto refuse = [&](const std::string& reason) -> std::optional<Dims> {
    *why = reason;
    return std::nullopt;
  };
  const std::string& op = node.op_type;
  if (BroadcastsElementwise(op)) {
    std::optional<Dims> out = Broadcast(in);
    return out ? out : refuse("its inputs broadcast only at some values of their symbols");
  }
  if (in.empty()) return refuse("no input");
  if (KeepsShape(op)) {
    if (op == "LayerNormalization" || op == "BatchNormalization")
      for (std::size_t k = 1; k < node.outputs.size(); ++k)
        if (node.outputs[k] != kNoValue) return refuse("it has statistics outputs");
    return in[0];
  }
  std::optional<Dims> out;
  if (op == "MatMul") {
    out = MatMul(in);
  } else if (op == "Gemm") {
    out = Gemm(node, in);
  } else if (op == "Transpose") {
    out = Transpose(node, in[0]);
  } else if (op == "Gather") {
    out = Gather(node, in);
  } else if (op == "Shape" || op == "Size") {
    // The evaluator's rule on the rank alone: the count of dims Shape's start and end keep.
    out.emplace();
    for (std::int64_t d : eval::ShapeOrSize(node, std::vector<std::int64_t>(in[0].size(), 1)).dims)
      out->push_back(Dim{d, ""});
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    const std::optional<std::vector<std::int64_t>> axes = in.size() > 1 ? ints(node, 1) : std::nullopt;
    if (!axes) return refuse("its axes are not constant");
    out = op == "Unsqueeze" ? Unsqueeze(in[0], *axes) : Squeeze(in[0], *axes);
  } else if (op == "Concat") {
    out = Concat(in, AttrInt(node, "axis", 0));
  } else if (op == "Flatten") {
    out = Flatten(in[0], Axis(AttrInt(node, "axis", 1), in[0].size()));
  } else if (IsReduction(op)) {
    out = Reduce(node, in, ints);
  } else {
    return refuse("no shape rule for " + op + " with symbolic dims");
  }
  return out ? out : refuse("its inputs agree only at some values of their symbols, or its axes are not constant");
}

}  // namespace onnxfuse
