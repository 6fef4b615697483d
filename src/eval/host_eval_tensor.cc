// Ops over whole host tensors (host_eval.h), as ONNX Operators.md defines
// them: LpNormalization, MeanVarianceNormalization, Shape, Size, EyeLike, Det.
#include <algorithm>
#include <cmath>
#include <string>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// Per-group statistics: the flat index of an element's group when the axes
// in `reduced` are summed over.
std::int64_t GroupOf(std::int64_t e, const Dims& dims, const std::vector<bool>& reduced) {
  const Dims strides = DenseStrides(dims);
  std::int64_t g = 0;
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (!reduced[d]) g = g * dims[d] + e / strides[d] % dims[d];
  return g;
}

// LpNormalization-1: x / (sum over axis of |x|^p)^(1/p), p 1 or 2 (default 2), axis -1.
Tensor LpNormalization(const Node& node, const Tensor& x) {
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", -1), x.dims.size(), node));
  const std::int64_t p = AttrInt(node, "p", 2);
  if (p != 1 && p != 2) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": p must be 1 or 2");
  std::vector<bool> reduced(x.dims.size(), false);
  reduced[axis] = true;
  const auto values = HostValues(x);
  std::vector<double> norm(values.size(), 0.0), y(values.size());
  for (std::size_t e = 0; e < values.size(); ++e)
    norm[static_cast<std::size_t>(GroupOf(static_cast<std::int64_t>(e), x.dims, reduced))] +=
        p == 1 ? std::fabs(values[e]) : values[e] * values[e];
  for (std::size_t e = 0; e < values.size(); ++e) {
    const double n = norm[static_cast<std::size_t>(GroupOf(static_cast<std::int64_t>(e), x.dims, reduced))];
    y[e] = values[e] / (p == 1 ? n : std::sqrt(n));
  }
  return MakeHostTensor(false, x.dims, y);
}

// MeanVarianceNormalization-13, its function body: (x - E[x]) /
// (sqrt(E[x^2] - E[x]^2) + 1e-9), the expectations over `axes` (default 0, 2, 3).
Tensor MeanVarianceNormalization(const Node& node, const Tensor& x) {
  std::vector<bool> reduced(x.dims.size(), false);
  for (auto a : AttrInts(node, "axes", {0, 2, 3}))
    reduced[static_cast<std::size_t>(NormAxis(a, x.dims.size(), node))] = true;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < x.dims.size(); ++d) count *= reduced[d] ? x.dims[d] : 1;
  const auto values = HostValues(x);
  std::vector<double> sum(values.size(), 0.0), sum_sq(values.size(), 0.0), y(values.size());
  for (std::size_t e = 0; e < values.size(); ++e) {
    const auto g = static_cast<std::size_t>(GroupOf(static_cast<std::int64_t>(e), x.dims, reduced));
    sum[g] += values[e], sum_sq[g] += values[e] * values[e];
  }
  for (std::size_t e = 0; e < values.size(); ++e) {
    const auto g = static_cast<std::size_t>(GroupOf(static_cast<std::int64_t>(e), x.dims, reduced));
    const double mean = sum[g] / static_cast<double>(count);
    const double variance = sum_sq[g] / static_cast<double>(count) - mean * mean;
    y[e] = (values[e] - mean) / (std::sqrt(std::max(variance, 0.0)) + 1e-9);
  }
  return MakeHostTensor(false, x.dims, y);
}

// EyeLike-9: ones where column - row == k, of the input's 2-D shape, of type
// dtype (default the input's).
Tensor EyeLike(const Node& node, const Tensor& x) {
  if (x.dims.size() != 2) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": input must be 2-D");
  const std::int64_t k = AttrInt(node, "k", 0);
  const auto type = static_cast<std::int32_t>(AttrInt(node, "dtype", x.DataType()));
  if (StorageTypeOf(type) == onnx::TensorProto::UNDEFINED)
    throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": dtype " + std::to_string(type) + " is not supported");
  std::vector<double> y(static_cast<std::size_t>(x.NumElements()), 0.0);
  for (std::int64_t i = 0; i < x.dims[0]; ++i)
    if (i + k >= 0 && i + k < x.dims[1]) y[static_cast<std::size_t>(i * x.dims[1] + i + k)] = 1.0;
  Tensor r = MakeHostTensor(StorageTypeOf(type) == onnx::TensorProto::INT64, x.dims, y);
  NarrowTo(r, type);
  return r;
}

// Det-11: the determinant of each [M, M] matrix of [..., M, M], by LU
// decomposition with partial pivoting in double.
Tensor Det(const Node& node, const Tensor& x) {
  const std::size_t r = x.dims.size();
  if (r < 2 || x.dims[r - 1] != x.dims[r - 2])
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": input must be [..., M, M]");
  const auto m = static_cast<std::size_t>(x.dims[r - 1]);
  const Dims out(x.dims.begin(), x.dims.end() - 2);
  const auto values = HostValues(x);
  std::vector<double> dets;
  for (std::size_t matrix = 0; matrix < static_cast<std::size_t>(Product(out)); ++matrix) {
    const std::size_t base = matrix * m * m;
    std::vector<double> a(values.begin() + static_cast<std::ptrdiff_t>(base),
                          values.begin() + static_cast<std::ptrdiff_t>(base + m * m));
    double det = 1;  // of a 0x0 matrix too
    for (std::size_t c = 0; c < m && det != 0; ++c) {
      std::size_t pivot = c;
      for (std::size_t i = c + 1; i < m; ++i)
        if (std::fabs(a[i * m + c]) > std::fabs(a[pivot * m + c])) pivot = i;
      if (pivot != c) {
        for (std::size_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[pivot * m + j]);
        det = -det;
      }
      det *= a[c * m + c];
      if (a[c * m + c] == 0) break;
      for (std::size_t i = c + 1; i < m; ++i) {
        const double f = a[i * m + c] / a[c * m + c];
        for (std::size_t j = c; j < m; ++j) a[i * m + j] -= f * a[c * m + j];
      }
    }
    dets.push_back(det);
  }
  return MakeHostTensor(false, out, dets);
}

}  // namespace

Tensor ShapeOrSize(const Node& node, const std::vector<std::int64_t>& dims) {
  Tensor r;
  r.elem_type = onnx::TensorProto::INT64;
  if (node.op_type == "Size") {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    r.int_data = {n};
    return r;
  }
  const auto rank = static_cast<std::int64_t>(dims.size());
  std::int64_t start = AttrInt(node, "start", 0), end = AttrInt(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank), end = std::clamp<std::int64_t>(end, start, rank);
  r.int_data.assign(dims.begin() + start, dims.begin() + end);
  r.dims = {end - start};
  return r;
}

HostOutputs EvalTensorOp(const Node& node, const HostInputs& in, std::int64_t) {
  const std::string& op = node.op_type;
  Tensor r;
  if (op == "LpNormalization") r = LpNormalization(node, NeedInput(node, in, 0));
  else if (op == "MeanVarianceNormalization") r = MeanVarianceNormalization(node, NeedInput(node, in, 0));
  else if (op == "Shape" || op == "Size") r = ShapeOrSize(node, NeedInput(node, in, 0).dims);
  else if (op == "EyeLike") r = EyeLike(node, NeedInput(node, in, 0));
  else if (op == "Det") r = Det(node, NeedInput(node, in, 0));
  else return std::nullopt;
  return One(std::move(r));
}

}  // namespace onnxfuse::eval
