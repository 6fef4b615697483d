// Unique on host tensors (ONNX Operators.md, Unique-11): the distinct
// elements of X (no axis: X flattened), or its distinct slices along `axis`,
// sorted ascending (slices lexicographically) or, with sorted = 0, in the
// order of their first occurrence. Outputs: Y; indices, the first occurrence
// of each in X; inverse_indices, for each element (or slice) of X its place
// in Y; counts. The last three are int64 [number of distinct ones] and
// [elements or slices of X].
#include <algorithm>
#include <numeric>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"

namespace onnxfuse::eval {

namespace {

// X as `count` slices of `inner` elements along one axis (between `outer`
// blocks of them): slice s of block o starts at (o * count + s) * inner.
struct Slices {
  std::int64_t outer = 1, count = 1, inner = 1;
};

// Orders and compares slices of `values` (data or int_data) element by element.
template <typename Values>
struct SliceOrder {
  const Values& values;
  Slices shape;
  int Compare(std::int64_t a, std::int64_t b) const {
    for (std::int64_t o = 0; o < shape.outer; ++o)
      for (std::int64_t e = 0; e < shape.inner; ++e) {
        const auto x = values[static_cast<std::size_t>((o * shape.count + a) * shape.inner + e)];
        const auto y = values[static_cast<std::size_t>((o * shape.count + b) * shape.inner + e)];
        if (x < y) return -1;
        if (y < x) return 1;
      }
    return 0;
  }
};

// The distinct slices: for each, its first occurrence, in the output order;
// and for each slice, the distinct one it equals.
template <typename Values>
void Distinct(const Values& values, const Slices& shape, bool sorted, std::vector<std::int64_t>& first,
              std::vector<std::int64_t>& inverse) {
  const SliceOrder<Values> order{values, shape};
  // Slices by value, ties by position: each run of equal ones starts at its first occurrence.
  std::vector<std::int64_t> by_value(static_cast<std::size_t>(shape.count));
  std::iota(by_value.begin(), by_value.end(), 0);
  std::stable_sort(by_value.begin(), by_value.end(),
                   [&](std::int64_t a, std::int64_t b) { return order.Compare(a, b) < 0; });
  std::vector<std::int64_t> run_of(static_cast<std::size_t>(shape.count));  // slice -> run number
  std::vector<std::int64_t> run_first;                                       // run -> first occurrence
  for (std::size_t k = 0; k < by_value.size(); ++k) {
    if (k == 0 || order.Compare(by_value[k - 1], by_value[k]) != 0) run_first.push_back(by_value[k]);
    run_of[static_cast<std::size_t>(by_value[k])] = static_cast<std::int64_t>(run_first.size()) - 1;
  }
  // The output's order: runs as sorted, or by their first occurrence.
  std::vector<std::int64_t> runs(run_first.size());
  std::iota(runs.begin(), runs.end(), 0);
  if (!sorted)
    std::sort(runs.begin(), runs.end(), [&](std::int64_t a, std::int64_t b) {
      return run_first[static_cast<std::size_t>(a)] < run_first[static_cast<std::size_t>(b)];
    });
  std::vector<std::int64_t> place(runs.size());  // run -> index in Y
  for (std::size_t k = 0; k < runs.size(); ++k) {
    place[static_cast<std::size_t>(runs[k])] = static_cast<std::int64_t>(k);
    first.push_back(run_first[static_cast<std::size_t>(runs[k])]);
  }
  for (std::int64_t s = 0; s < shape.count; ++s)
    inverse.push_back(place[static_cast<std::size_t>(run_of[static_cast<std::size_t>(s)])]);
}

Tensor Int64s(std::vector<std::int64_t> values) {
  Tensor t;
  t.elem_type = t.data_type = onnx::TensorProto::INT64;
  t.dims = {static_cast<std::int64_t>(values.size())};
  t.int_data = std::move(values);
  return t;
}

std::vector<Tensor> Unique(const Node& node, const Tensor& x) {
  const bool has_axis = FindAttr(node, "axis") != nullptr;
  const bool sorted = AttrInt(node, "sorted", 1) != 0;
  Slices shape;
  std::size_t axis = 0;
  if (has_axis) {
    axis = static_cast<std::size_t>(NormAxis(AttrInt(node, "axis", 0), x.dims.size(), node));
    shape.outer = Product(Dims(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis)));
    shape.count = x.dims[axis];
    shape.inner = Product(Dims(x.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims.end()));
  } else {
    shape.count = x.NumElements();
  }
  std::vector<std::int64_t> first, inverse;
  if (IsInt64(x)) Distinct(x.int_data, shape, sorted, first, inverse);
  else Distinct(x.data, shape, sorted, first, inverse);

  Tensor y;
  y.elem_type = x.elem_type, y.data_type = x.data_type;
  y.dims = has_axis ? x.dims : Dims{};
  if (has_axis) y.dims[axis] = static_cast<std::int64_t>(first.size());
  else y.dims = {static_cast<std::int64_t>(first.size())};
  const auto gather = [&](const auto& from, auto& to) {
    if (from.empty()) return;  // the storage type x does not use
    for (std::int64_t o = 0; o < shape.outer; ++o)
      for (std::int64_t s : first) {
        const auto begin = from.begin() + (o * shape.count + s) * shape.inner;
        to.insert(to.end(), begin, begin + shape.inner);
      }
  };
  gather(x.data, y.data);
  gather(x.int_data, y.int_data);
  std::vector<std::int64_t> counts(first.size(), 0);
  for (std::int64_t k : inverse) ++counts[static_cast<std::size_t>(k)];
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(y));
  outputs.push_back(Int64s(std::move(first)));
  outputs.push_back(Int64s(std::move(inverse)));
  outputs.push_back(Int64s(std::move(counts)));
  return outputs;
}

}  // namespace

HostOutputs EvalUniqueOp(const Node& node, const HostInputs& in, std::int64_t /*opset*/) {
  if (node.op_type != "Unique") return std::nullopt;
  return Unique(node, NeedInput(node, in, 0));
}

}  // namespace onnxfuse::eval
