// Ops that move elements by index tensors on host tensors (host_eval.h), as
// ONNX Operators.md defines them: GatherElements, GatherND, Scatter (its
// deprecated name) and ScatterElements, ScatterND, OneHot, Compress,
// ReverseSequence, NonZero. Indices may be negative (counted from the end of
// their axis) where the spec allows it; an index outside its range is
// Error(kInvalidModel) naming the node.
#include <algorithm>
#include <string>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// An index into an axis of n elements, negative ones counted from the end.
[[noreturn]] void IndexOutside(const Node& node, std::int64_t k, std::int64_t n) {
  throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": index " + std::to_string(k) + " is outside [" +
                                            std::to_string(-n) + ", " + std::to_string(n - 1) + "]");
}

// Inline: ScatterElements and GatherElements call it once per element.
inline std::int64_t CheckedIndex(const Node& node, std::int64_t k, std::int64_t n) {
  if (k < -n || k >= n) IndexOutside(node, k, n);
  return k < 0 ? k + n : k;
}

// The elements of an index tensor as int64: its own when it holds them
// (no copy of what may be millions of indices), else converted into `held`.
const std::vector<std::int64_t>& IndicesOf(const Tensor& indices, std::vector<std::int64_t>& held) {
  if (IsInt64(indices)) return indices.int_data;
  held = AsInts(indices);
  return held;
}

// How ScatterElements-16 and ScatterND-16 combine an update with what is there.
enum class Reduction { kNone, kAdd, kMul };

Reduction ReductionOf(const Node& node) {
  const std::string r = AttrString(node, "reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": reduction '" + r + "' is not supported");
}

// Element i of `from` into element j of `to`, combined by `reduction`.
void Combine(Tensor& to, std::int64_t j, const Tensor& from, std::int64_t i, Reduction reduction) {
  const auto tj = static_cast<std::size_t>(j), fi = static_cast<std::size_t>(i);
  const auto apply = [reduction](auto& x, auto v) {
    x = reduction == Reduction::kAdd ? x + v : reduction == Reduction::kMul ? x * v : v;
  };
  if (IsInt64(to)) apply(to.int_data[tj], from.int_data[fi]);
  else apply(to.data[tj], from.data[fi]);
}

// Calls visit(i, base) for each flat index i of `index_dims` in order, `base`
// the flat index into `dims` of i's coordinates with the one on `axis` 0: an
// odometer, no division per element.
template <typename Visit>
void ForEachOffAxis(const Dims& index_dims, const Dims& dims, std::size_t axis, Visit visit) {
  const std::size_t rank = dims.size();
  std::vector<std::int64_t> stride(rank, 1), coord(rank, 0);
  for (std::size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * dims[d];
  const std::int64_t count = Product(index_dims);
  std::int64_t base = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    visit(i, base);
    for (std::size_t d = rank; d-- > 0;) {
      if (++coord[d] < index_dims[d]) {
        if (d != axis) base += stride[d];
        break;
      }
      if (d != axis) base -= (index_dims[d] - 1) * stride[d];
      coord[d] = 0;
    }
  }
}

// GatherElements and ScatterElements address data at indices' own coordinates
// off the axis (ONNX Operators.md, GatherElements-13, ScatterElements-16), so
// each of those dims of indices must fit in data's: a larger one would read or
// write outside data (a symbolic dim of data smaller at run time than a fixed
// dim of indices).
void CheckIndexDims(const Node& node, const Dims& index_dims, const Dims& dims, std::size_t axis) {
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (d != axis && index_dims[d] > dims[d])
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": indices' dim " + std::to_string(d) + " is " +
                                                std::to_string(index_dims[d]) + ", above data's " +
                                                std::to_string(dims[d]));
}

// GatherElements-13: out[i] = data[i with axis coordinate indices[i]], out of the shape of indices.
Tensor GatherElements(const Node& node, const Tensor& data, const Tensor& indices) {
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), data.dims.size(), node));
  if (indices.dims.size() != data.dims.size())
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": data and indices differ in rank");
  CheckIndexDims(node, indices.dims, data.dims, axis);
  std::vector<std::int64_t> held;
  const std::vector<std::int64_t>& idx = IndicesOf(indices, held);
  Tensor out;
  out.elem_type = data.elem_type, out.dims = indices.dims;
  if (IsInt64(data)) out.int_data.resize(idx.size());
  else out.data.resize(idx.size());
  const std::int64_t along = Product(Dims(data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end()));
  ForEachOffAxis(indices.dims, data.dims, axis, [&](std::int64_t i, std::int64_t base) {
    const auto at = static_cast<std::size_t>(i);
    const auto src = static_cast<std::size_t>(base + CheckedIndex(node, idx[at], data.dims[axis]) * along);
    if (IsInt64(data)) out.int_data[at] = data.int_data[src];
    else out.data[at] = data.data[src];
  });
  return out;
}

// ScatterElements-16 (and Scatter-9): a copy of data with updates[i] written
// at i's position with the axis coordinate indices[i], in index order.
Tensor ScatterElements(const Node& node, const Tensor& data, const Tensor& indices, const Tensor& updates) {
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), data.dims.size(), node));
  if (indices.dims != updates.dims || indices.dims.size() != data.dims.size() || IsInt64(data) != IsInt64(updates))
    throw Error(ErrorKind::kInvalidModel,
                NodeLabel(node) + ": indices and updates must match, of data's rank and type");
  CheckIndexDims(node, indices.dims, data.dims, axis);
  const Reduction reduction = ReductionOf(node);
  std::vector<std::int64_t> held;
  const std::vector<std::int64_t>& idx = IndicesOf(indices, held);
  Tensor out = data;
  const std::int64_t along = Product(Dims(data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end()));
  const std::int64_t extent = data.dims[axis];
  if (reduction == Reduction::kNone) {  // a plain write, the element type decided once
    auto write = [&](auto field) {
      auto& to = out.*field;
      const auto& from = updates.*field;
      ForEachOffAxis(indices.dims, data.dims, axis, [&](std::int64_t i, std::int64_t base) {
        const auto at = static_cast<std::size_t>(i);
        to[static_cast<std::size_t>(base + CheckedIndex(node, idx[at], extent) * along)] = from[at];
      });
    };
    if (IsInt64(out)) write(&Tensor::int_data);
    else write(&Tensor::data);
    return out;
  }
  ForEachOffAxis(indices.dims, data.dims, axis, [&](std::int64_t i, std::int64_t base) {
    const auto at = static_cast<std::size_t>(i);
    Combine(out, base + CheckedIndex(node, idx[at], extent) * along, updates, i, reduction);
  });
  return out;
}

// The element offset within data (of `dims`, from axis `first` on) of the index
// tuple idx[at .. at + m), and the size of the slice each tuple selects.
std::int64_t TupleOffset(const Node& node, const std::vector<std::int64_t>& idx, std::size_t at, std::int64_t m,
                         const Dims& dims, std::size_t first) {
  std::int64_t offset = 0;
  for (std::int64_t j = 0; j < m; ++j) {
    const std::int64_t n = dims[first + static_cast<std::size_t>(j)];
    offset = offset * n + CheckedIndex(node, idx[at + static_cast<std::size_t>(j)], n);
  }
  return offset * Product(Dims(dims.begin() + static_cast<std::ptrdiff_t>(first) + m, dims.end()));
}

// GatherND-13 (batch_dims from 12): each last-axis tuple of indices selects a
// slice of data; out dims = indices.dims[:-1] + data.dims[batch_dims + m:].
Tensor GatherND(const Node& node, const Tensor& data, const Tensor& indices) {
  const auto b = static_cast<std::size_t>(AttrInt(node, "batch_dims", 0));
  if (indices.dims.empty() || b >= indices.dims.size() || b >= data.dims.size() ||
      !std::equal(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(b), indices.dims.begin()))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": batch_dims and the shapes disagree");
  const std::int64_t m = indices.dims.back();
  if (m < 1 || b + static_cast<std::size_t>(m) > data.dims.size())
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": index tuples longer than data's rank");
  Dims out(indices.dims.begin(), indices.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(b) + m, data.dims.end());
  const std::int64_t batches = Product(Dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(b)));
  const std::int64_t per_batch = Product(data.dims) / std::max<std::int64_t>(batches, 1);
  const std::int64_t tuples = Product(indices.dims) / m / std::max<std::int64_t>(batches, 1);
  const std::int64_t slice = Product(Dims(data.dims.begin() + static_cast<std::ptrdiff_t>(b) + m, data.dims.end()));
  const auto idx = AsInts(indices);
  Tensor r;
  r.elem_type = data.elem_type, r.dims = out;
  for (std::int64_t batch = 0; batch < batches; ++batch)
    for (std::int64_t t = 0; t < tuples; ++t) {
      const auto at = static_cast<std::size_t>((batch * tuples + t) * m);
      const std::int64_t base = batch * per_batch + TupleOffset(node, idx, at, m, data.dims, b);
      for (std::int64_t s = 0; s < slice; ++s) {
        const auto src = static_cast<std::size_t>(base + s);
        if (IsInt64(data)) r.int_data.push_back(data.int_data[src]);
        else r.data.push_back(data.data[src]);
      }
    }
  return r;
}

// ScatterND-16: a copy of data with each slice of updates written (or
// combined by reduction) where its last-axis index tuple points, in order.
Tensor ScatterND(const Node& node, const Tensor& data, const Tensor& indices, const Tensor& updates) {
  if (indices.dims.empty() || indices.dims.back() < 1 ||
      static_cast<std::size_t>(indices.dims.back()) > data.dims.size() || IsInt64(data) != IsInt64(updates))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": index tuples longer than data's rank");
  const std::int64_t m = indices.dims.back();
  Dims want(indices.dims.begin(), indices.dims.end() - 1);
  want.insert(want.end(), data.dims.begin() + m, data.dims.end());
  if (updates.dims != want)
    throw Error(ErrorKind::kInvalidModel,
                NodeLabel(node) + ": updates are " + DimsString(updates.dims) + ", expected " + DimsString(want));
  const Reduction reduction = ReductionOf(node);
  const auto idx = AsInts(indices);
  const std::int64_t tuples = Product(indices.dims) / m, slice = Product(Dims(data.dims.begin() + m, data.dims.end()));
  Tensor out = data;
  for (std::int64_t t = 0; t < tuples; ++t) {
    const std::int64_t base = TupleOffset(node, idx, static_cast<std::size_t>(t * m), m, data.dims, 0);
    for (std::int64_t s = 0; s < slice; ++s) Combine(out, base + s, updates, t * slice + s, reduction);
  }
  return out;
}

// OneHot-11: a new axis (default -1, the last) of `depth` elements, on_value
// at the index and off_value elsewhere; negative indices count from depth, and
// an index outside [-depth, depth) gives a row of off_value (as the spec says).
Tensor OneHot(const Node& node, const Tensor& indices, const Tensor& depth_tensor, const Tensor& values) {
  if (depth_tensor.NumElements() != 1 || values.NumElements() != 2)
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": depth must hold one value and values two");
  const auto depth = static_cast<std::int64_t>(ElementAt(depth_tensor, 0));
  if (depth < 1) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": depth below 1");
  const auto axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", -1), indices.dims.size() + 1, node));
  Dims out = indices.dims;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  const std::int64_t inner =
      Product(Dims(indices.dims.begin() + static_cast<std::ptrdiff_t>(axis), indices.dims.end()));
  const std::int64_t outer = indices.NumElements() / std::max<std::int64_t>(inner, 1);
  const double off = ElementAt(values, 0), on = ElementAt(values, 1);
  std::vector<double> y(static_cast<std::size_t>(Product(out)), off);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto k = static_cast<std::int64_t>(ElementAt(indices, o * inner + i));  // float indices truncate
      if (k < -depth || k >= depth) continue;
      if (k < 0) k += depth;
      y[static_cast<std::size_t>((o * depth + k) * inner + i)] = on;
    }
  return MakeHostTensor(IsInt64(values), out, y);
}

// Compress-11: the slices along `axis` (or the elements of the flattened
// input, without axis) whose condition is true; condition may be shorter.
Tensor Compress(const Node& node, const Tensor& x, const Tensor& condition) {
  const auto* axis_attr = FindAttr(node, "axis");
  Dims dims = x.dims;
  std::size_t axis = 0;
  if (axis_attr) axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), x.dims.size(), node));
  else dims = {x.NumElements()};
  const auto keep = AsInts(condition);
  if (condition.dims.size() != 1 || static_cast<std::int64_t>(keep.size()) > dims[axis])
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": condition must be 1-D, no longer than the axis");
  const std::int64_t outer = Product(Dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(axis)));
  const std::int64_t inner = Product(Dims(dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, dims.end()));
  Dims out = dims;
  out[axis] = static_cast<std::int64_t>(std::count_if(keep.begin(), keep.end(), [](std::int64_t c) { return c != 0; }));
  std::vector<double> y;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < keep.size(); ++k)
      for (std::int64_t i = 0; keep[k] != 0 && i < inner; ++i)
        y.push_back(ElementAt(x, (o * dims[axis] + static_cast<std::int64_t>(k)) * inner + i));
  return MakeHostTensor(IsInt64(x), out, y);
}

// ReverseSequence-10: for batch b, the first sequence_lens[b] steps along
// time_axis (default 0) reversed, the rest copied; batch_axis default 1.
Tensor ReverseSequence(const Node& node, const Tensor& x, const Tensor& lens_tensor) {
  const std::int64_t time_axis = AttrInt(node, "time_axis", 0), batch_axis = AttrInt(node, "batch_axis", 1);
  if (x.dims.size() < 2 || !((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0)))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": time_axis and batch_axis must be 0 and 1");
  const auto lens = AsInts(lens_tensor);
  const auto t_ax = static_cast<std::size_t>(time_axis), b_ax = static_cast<std::size_t>(batch_axis);
  if (static_cast<std::int64_t>(lens.size()) != x.dims[b_ax])
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": sequence_lens must have one value per batch");
  const Dims strides = DenseStrides(x.dims);
  std::vector<double> y = HostValues(x);
  for (std::int64_t e = 0; e < x.NumElements(); ++e) {
    const std::int64_t t = e / strides[t_ax] % x.dims[t_ax], b = e / strides[b_ax] % x.dims[b_ax];
    const std::int64_t len = lens[static_cast<std::size_t>(b)];
    if (len < 1 || len > x.dims[t_ax])
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": sequence length " + std::to_string(len) +
                                                " outside [1, " + std::to_string(x.dims[t_ax]) + "]");
    if (t < len) y[static_cast<std::size_t>(e)] = ElementAt(x, e + (len - 1 - 2 * t) * strides[t_ax]);
  }
  return MakeHostTensor(IsInt64(x), x.dims, y);
}

// NonZero-13: the int64 coordinates [rank, count] of the non-zero elements, in row-major order.
Tensor NonZero(const Tensor& x) {
  const Dims strides = DenseStrides(x.dims);
  std::vector<std::int64_t> found;
  for (std::int64_t e = 0; e < x.NumElements(); ++e)
    if (ElementAt(x, e) != 0) found.push_back(e);
  const auto count = static_cast<std::int64_t>(found.size());
  Tensor r;
  r.elem_type = onnx::TensorProto::INT64;
  r.dims = {static_cast<std::int64_t>(x.dims.size()), count};
  r.int_data.resize(x.dims.size() * found.size());
  for (std::size_t d = 0; d < x.dims.size(); ++d)
    for (std::size_t k = 0; k < found.size(); ++k) r.int_data[d * found.size() + k] = found[k] / strides[d] % x.dims[d];
  return r;
}

}  // namespace

HostOutputs EvalIndexOp(const Node& node, const HostInputs& in, std::int64_t) {
  const std::string& op = node.op_type;
  auto need = [&](std::size_t i) -> const Tensor& { return NeedInput(node, in, i); };
  Tensor r;
  if (op == "GatherElements") r = GatherElements(node, need(0), need(1));
  else if (op == "GatherND") r = GatherND(node, need(0), need(1));
  else if (op == "Scatter" || op == "ScatterElements") r = ScatterElements(node, need(0), need(1), need(2));
  else if (op == "ScatterND") r = ScatterND(node, need(0), need(1), need(2));
  else if (op == "OneHot") r = OneHot(node, need(0), need(1), need(2));
  else if (op == "Compress") r = Compress(node, need(0), need(1));
  else if (op == "ReverseSequence") r = ReverseSequence(node, need(0), need(1));
  else if (op == "NonZero") r = NonZero(need(0));
  else return std::nullopt;
  return One(std::move(r));
}

}  // namespace onnxfuse::eval
