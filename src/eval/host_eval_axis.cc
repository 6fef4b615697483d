// Ops along one axis of a host tensor (host_eval.h), as ONNX Operators.md
// defines them: ArgMax, ArgMin, TopK, Hardmax, CumSum, and Trilu over the last
// two axes. A tensor is seen as [outer, n, inner] around the axis.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// dims as [outer, n, inner] around `axis`; (o, k, i) is at (o * n + k) * inner + i.
struct AxisView {
  std::int64_t outer = 1, n = 1, inner = 1;
  std::int64_t At(std::int64_t o, std::int64_t k, std::int64_t i) const { return (o * n + k) * inner + i; }
};

AxisView ViewAround(const Dims& dims, std::size_t axis) {
  AxisView v;
  for (std::size_t d = 0; d < dims.size(); ++d) (d < axis ? v.outer : d == axis ? v.n : v.inner) *= dims[d];
  return v;
}

// ArgMax-13 / ArgMin-13 (axis 0, keepdims 1, select_last_index 0 from 12):
// the int64 index of the first (or last) extreme element along the axis.
Tensor ArgExtreme(const Node& node, const Tensor& x) {
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), x.dims.size(), node));
  const bool is_max = node.op_type == "ArgMax", last = AttrInt(node, "select_last_index", 0) != 0;
  const AxisView v = ViewAround(x.dims, axis);
  if (v.n == 0) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": the reduced axis is empty");
  Dims out = x.dims;
  if (AttrInt(node, "keepdims", 1)) out[axis] = 1;
  else out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<double> result;
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner; ++i) {
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < v.n; ++k) {
        const double a = ElementAt(x, v.At(o, k, i)), b = ElementAt(x, v.At(o, best, i));
        if (is_max ? (a > b || (last && a == b)) : (a < b || (last && a == b))) best = k;
      }
      result.push_back(static_cast<double>(best));
    }
  return MakeHostTensor(true, out, result);
}

// TopK (k an attribute before 10, input K from 10; axis -1; largest and
// sorted 1 from 11): values and int64 indices of the k largest (smallest)
// along the axis, in order; equal values keep the lower index first. The
// order is also sorted when sorted is 0 (the spec leaves it open then).
std::vector<Tensor> TopK(const Node& node, const HostInputs& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", -1), x.dims.size(), node));
  std::int64_t k = AttrInt(node, "k", -1);
  if (opset >= 10) {
    const auto ks = AsInts(NeedInput(node, in, 1));
    if (ks.size() != 1) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": K must hold one value");
    k = ks[0];
  }
  const AxisView v = ViewAround(x.dims, axis);
  if (k < 0 || k > v.n)
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": k " + std::to_string(k) + " is outside [0, " +
                                              std::to_string(v.n) + "]");
  const bool largest = AttrInt(node, "largest", 1) != 0;
  Dims out = x.dims;
  out[axis] = k;
  const AxisView w{v.outer, k, v.inner};
  std::vector<double> values(static_cast<std::size_t>(Product(out))), indices(values.size());
  std::vector<std::int64_t> order(static_cast<std::size_t>(v.n));
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner; ++i) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        const double p = ElementAt(x, v.At(o, a, i)), q = ElementAt(x, v.At(o, b, i));
        return largest ? p > q : p < q;
      });
      for (std::int64_t j = 0; j < k; ++j) {
        const auto at = static_cast<std::size_t>(w.At(o, j, i));
        values[at] = ElementAt(x, v.At(o, order[static_cast<std::size_t>(j)], i));
        indices[at] = static_cast<double>(order[static_cast<std::size_t>(j)]);
      }
    }
  return {MakeHostTensor(IsInt64(x), out, values), MakeHostTensor(true, out, indices)};
}

// Hardmax: 1 at the first maximum, 0 elsewhere. Before 13 the input is seen
// as 2-D, [prod(dims[:axis]), prod(dims[axis:])] (axis default 1); from 13
// along `axis` (default -1).
Tensor Hardmax(const Node& node, const Tensor& x, std::int64_t opset) {
  const bool coerced = opset < 13;
  std::int64_t axis = AttrInt(node, "axis", coerced ? 1 : -1);
  axis = NormAxis(axis, x.dims.size(), node);
  AxisView v = ViewAround(x.dims, static_cast<std::size_t>(axis));
  if (coerced) v = {v.outer, v.n * v.inner, 1};
  std::vector<double> y(static_cast<std::size_t>(x.NumElements()), 0.0);
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner && v.n > 0; ++i) {
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < v.n; ++k)
        if (ElementAt(x, v.At(o, k, i)) > ElementAt(x, v.At(o, best, i))) best = k;
      y[static_cast<std::size_t>(v.At(o, best, i))] = 1.0;
    }
  return MakeHostTensor(IsInt64(x), x.dims, y);
}

// Softmax-13 and LogSoftmax-13 along `axis` (default -1); before 13 over the
// input seen as 2-D from `axis` (default 1), as Hardmax. Each slice in double:
// exp(x - max) / sum, and (x - max) - log(sum), so that large inputs do not
// overflow (the form ONNX's reference implementation uses).
Tensor Softmax(const Node& node, const Tensor& x, std::int64_t opset) {
  const bool coerced = opset < 13, log = node.op_type == "LogSoftmax";
  const std::int64_t axis = NormAxis(AttrInt(node, "axis", coerced ? 1 : -1), x.dims.size(), node);
  AxisView v = ViewAround(x.dims, static_cast<std::size_t>(axis));
  if (coerced) v = {v.outer, v.n * v.inner, 1};
  Tensor y = x;
  std::vector<double> e(static_cast<std::size_t>(v.n));
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner && v.n > 0; ++i) {
      double max = ElementAt(x, v.At(o, 0, i));
      for (std::int64_t k = 1; k < v.n; ++k) max = std::max(max, ElementAt(x, v.At(o, k, i)));
      double sum = 0;
      for (std::int64_t k = 0; k < v.n; ++k) {
        e[static_cast<std::size_t>(k)] = ElementAt(x, v.At(o, k, i)) - max;
        sum += std::exp(e[static_cast<std::size_t>(k)]);
      }
      const double log_sum = std::log(sum);
      for (std::int64_t k = 0; k < v.n; ++k) {
        const double d = e[static_cast<std::size_t>(k)];
        y.data[static_cast<std::size_t>(v.At(o, k, i))] = static_cast<float>(log ? d - log_sum : std::exp(d) / sum);
      }
    }
  return y;
}

// CumSum-14 (from 11): running sums along the axis given as input 1;
// exclusive leaves out the element itself, reverse runs from the end.
Tensor CumSum(const Node& node, const Tensor& x, const Tensor& axis_tensor) {
  const auto axes = AsInts(axis_tensor);
  if (axes.size() != 1) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": axis must hold one value");
  const auto axis = static_cast<std::size_t>(NormAxis(axes[0], x.dims.size(), node));
  const bool exclusive = AttrInt(node, "exclusive", 0) != 0, reverse = AttrInt(node, "reverse", 0) != 0;
  const AxisView v = ViewAround(x.dims, axis);
  Tensor y = x;
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner; ++i) {
      double sum = 0;
      std::int64_t isum = 0;
      for (std::int64_t j = 0; j < v.n; ++j) {
        const auto at = static_cast<std::size_t>(v.At(o, reverse ? v.n - 1 - j : j, i));
        if (IsInt64(x)) {
          const std::int64_t e = x.int_data[at];
          if (!exclusive) isum += e;
          y.int_data[at] = isum;
          if (exclusive) isum += e;
        } else {
          const double e = x.data[at];
          if (!exclusive) sum += e;
          y.data[at] = static_cast<float>(sum);
          if (exclusive) sum += e;
        }
      }
    }
  return y;
}

// Trilu-14: over the last two axes [N, M], keeps j - i >= k (upper, the
// default) or j - i <= k (lower) and zeroes the rest; k is input 1 (default 0).
Tensor Trilu(const Node& node, const HostInputs& in) {
  const Tensor& x = NeedInput(node, in, 0);
  if (x.dims.size() < 2) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": input rank below 2");
  std::int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    const auto ks = AsInts(*in[1]);
    if (ks.size() != 1) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": k must hold one value");
    k = ks[0];
  }
  const bool upper = AttrInt(node, "upper", 1) != 0;
  const std::int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
  Tensor y = x;
  for (std::int64_t e = 0; e < x.NumElements(); ++e) {
    const std::int64_t i = e / cols % rows, j = e % cols;
    if (upper ? j - i >= k : j - i <= k) continue;
    if (IsInt64(y)) y.int_data[static_cast<std::size_t>(e)] = 0;
    else y.data[static_cast<std::size_t>(e)] = 0;
  }
  return y;
}

}  // namespace

HostOutputs EvalAxisOp(const Node& node, const HostInputs& in, std::int64_t opset) {
  const std::string& op = node.op_type;
  if (op == "ArgMax" || op == "ArgMin") return One(ArgExtreme(node, NeedInput(node, in, 0)));
  if (op == "TopK") return TopK(node, in, opset);
  if (op == "Hardmax") return One(Hardmax(node, NeedInput(node, in, 0), opset));
  if (op == "Softmax" || op == "LogSoftmax") {
    const Tensor& x = NeedInput(node, in, 0);
    if (IsInt64(x)) InvalidNode(node, "an integer input");
    return One(Softmax(node, x, opset));
  }
  if (op == "CumSum") return One(CumSum(node, NeedInput(node, in, 0), NeedInput(node, in, 1)));
  if (op == "Trilu") return One(Trilu(node, in));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
