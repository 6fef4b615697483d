// If, Loop and Scan as the staged runner evaluates them (staged_model.h):
// each subgraph is a staged model of its own (StagedModel::Body), run with
// the values it reads from outside, once per branch taken or per iteration.
#include <algorithm>
#include <limits>
#include <utility>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "ir/tensor_io.h"
#include "eval/host_tensor.h"
#include "onnxfuse/error.h"
#include "session/staged_model.h"

namespace onnxfuse::session {

namespace {


Tensor Scalar(std::int32_t data_type, std::int64_t value) {
  Tensor t;
  t.elem_type = onnx::TensorProto::INT64;
  t.data_type = data_type;
  t.int_data = {value};
  return t;
}

bool Truth(const Tensor& t) {
  return t.elem_type == onnx::TensorProto::INT64 ? t.int_data.at(0) != 0 : t.data.at(0) != 0.0f;
}

// The products of `dims` before `axis` and from `first` on.
std::pair<std::int64_t, std::int64_t> OuterInner(const std::vector<std::int64_t>& dims, std::size_t axis,
                                                 std::size_t first) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d < axis) outer *= dims[d];
    if (d >= first) inner *= dims[d];
  }
  return {outer, inner};
}

// Index `index` of `t` along `axis`, that axis removed (a Scan input's slice).
Tensor SliceAlong(const Tensor& t, std::size_t axis, std::int64_t index) {
  Tensor slice;
  slice.elem_type = t.elem_type;
  slice.data_type = t.data_type;
  slice.dims = t.dims;
  slice.dims.erase(slice.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  const std::pair<std::int64_t, std::int64_t> extents = OuterInner(t.dims, axis, axis + 1);
  const std::int64_t outer = extents.first, inner = extents.second;  // named: lambdas capture them
  const std::int64_t length = t.dims[axis];
  const auto copy = [&](const auto& from, auto& to) {
    if (from.empty()) return;
    for (std::int64_t o = 0; o < outer; ++o) {
      const auto begin = from.begin() + (o * length + index) * inner;
      to.insert(to.end(), begin, begin + inner);
    }
  };
  copy(t.data, slice.data);
  copy(t.int_data, slice.int_data);
  return slice;
}

// `items` (one per iteration, equal shapes) stacked along a new axis `axis`
// (0 ≤ axis ≤ their rank).
Tensor StackAlong(const std::vector<Tensor>& items, std::size_t axis, const std::string& name, const char* op) {
  Tensor t;
  t.name = name;
  t.elem_type = items.front().elem_type;
  t.data_type = items.front().data_type;
  t.dims = items.front().dims;
  for (const Tensor& item : items)
    if (item.dims != t.dims)
      throw Error(ErrorKind::kInvalidModel,
                  "scan output '" + name + "' changes shape between " + op + " iterations");
  // The item's extents before and from `axis` (named: lambdas capture them).
  const std::pair<std::int64_t, std::int64_t> extents = OuterInner(t.dims, axis, axis);
  const std::int64_t outer = extents.first, inner = extents.second;
  t.dims.insert(t.dims.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<std::int64_t>(items.size()));
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Tensor& item : items) {
      const auto span = [&](const auto& from, auto& to) {
        if (!from.empty()) to.insert(to.end(), from.begin() + o * inner, from.begin() + (o + 1) * inner);
      };
      span(item.data, t.data);
      span(item.int_data, t.int_data);
    }
  return t;
}

// A scan output of no iteration: of the rank the body declares, 0 at `axis`.
Tensor EmptyScanOutput(const Graph& body, ValueId output, std::size_t axis) {
  const TensorType& type = body.value(output).type;
  Tensor empty;
  empty.name = body.value(output).name;
  empty.data_type = type.elem_type;
  empty.elem_type = StorageTypeOf(type.elem_type);
  for (std::int64_t d : type.dims) empty.dims.push_back(std::max<std::int64_t>(d, 0));
  empty.dims.insert(empty.dims.begin() + static_cast<std::ptrdiff_t>(std::min(axis, empty.dims.size())), 0);
  return empty;
}

}  // namespace

std::vector<Tensor> StagedModel::RunIf(NodeId id, const std::vector<const Tensor*>& inputs, const KnownValues& known) {
  const Node& node = prepared().node(id);
  if (!inputs[0] || inputs[0]->NumElements() != 1)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(prepared(), node) + ": its condition is not one element");
  StagedModel& branch = Body(id, Truth(*inputs[0]) ? "then_branch" : "else_branch", known);
  return branch.Run(OuterValues(branch.prepared(), 0, known));  // a branch has no inputs of its own
}

std::vector<Tensor> StagedModel::RunLoop(NodeId id, const std::vector<const Tensor*>& inputs,
                                         const KnownValues& known) {
  // ONNX Operators.md, Loop-16: body inputs (iteration_num, condition,
  // loop-carried...), outputs (condition, loop-carried..., scan outputs...).
  const Node& node = prepared().node(id);
  StagedModel& body = Body(id, "body", known);
  const Graph& g = body.prepared();
  const std::size_t carried = inputs.size() > 2 ? inputs.size() - 2 : 0;
  if (g.inputs().size() < 2 + carried || g.outputs().size() < 1 + carried)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(prepared(), node) + ": its body does not take and give " +
                                              std::to_string(carried) + " loop-carried values");
  const std::int64_t trip = inputs[0] ? eval::AsInts(*inputs[0]).at(0) : std::numeric_limits<std::int64_t>::max();
  bool condition = inputs.size() < 2 || !inputs[1] || Truth(*inputs[1]);
  std::vector<Tensor> state;
  for (std::size_t k = 0; k < carried; ++k) state.push_back(*inputs[2 + k]);
  const std::size_t scans = g.outputs().size() - 1 - carried;
  std::vector<std::vector<Tensor>> scanned(scans);
  const KnownValues outer = OuterValues(g, 2 + carried, known);
  for (std::int64_t i = 0; i < trip && condition; ++i) {
    KnownValues feed = outer;
    feed[g.value(g.inputs()[0]).name] = Scalar(onnx::TensorProto::INT64, i);
    feed[g.value(g.inputs()[1]).name] = Scalar(onnx::TensorProto::BOOL, condition ? 1 : 0);
    for (std::size_t k = 0; k < carried; ++k) feed[g.value(g.inputs()[2 + k]).name] = state[k];
    std::vector<Tensor> results = body.Run(std::move(feed));
    condition = Truth(results[0]);
    for (std::size_t k = 0; k < carried; ++k) state[k] = std::move(results[1 + k]);
    for (std::size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(results[1 + carried + k]));
  }
  std::vector<Tensor> outputs = std::move(state);
  for (std::size_t k = 0; k < scans; ++k) {
    const ValueId out = g.outputs()[1 + carried + k];
    outputs.push_back(scanned[k].empty() ? EmptyScanOutput(g, out, 0)
                                         : StackAlong(scanned[k], 0, g.value(out).name, "Loop"));
  }
  return outputs;
}

std::vector<Tensor> StagedModel::RunScan(NodeId id, const std::vector<const Tensor*>& inputs,
                                         const KnownValues& known) {
  // ONNX Operators.md, Scan-16: inputs (state..., scan inputs...), body
  // inputs (state..., one slice of each scan input), body outputs (state...,
  // scan output slices...); scan_input_axes / scan_output_axes (negative:
  // from the end), *_directions 1 for reverse.
  const Node& node = prepared().node(id);
  const std::string where = NodeInFile(prepared(), node);
  StagedModel& body = Body(id, "body", known);
  const Graph& g = body.prepared();
  const auto m = static_cast<std::size_t>(AttrInt(node, "num_scan_inputs", 0));
  if (m == 0 || m > inputs.size() || g.inputs().size() < inputs.size() || g.outputs().size() < inputs.size() - m)
    throw Error(ErrorKind::kInvalidModel, where + ": its inputs, num_scan_inputs and body do not agree");
  const std::size_t states = inputs.size() - m, scans = g.outputs().size() - states;
  const auto attr = [&](const char* name, std::size_t count) {
    std::vector<std::int64_t> v = AttrInts(node, name, std::vector<std::int64_t>(count, 0));
    if (v.size() != count)
      throw Error(ErrorKind::kInvalidModel, where + ": " + name + " has " + std::to_string(v.size()) +
                                                " values for " + std::to_string(count));
    return v;
  };
  const std::vector<std::int64_t> in_axes = attr("scan_input_axes", m), in_dirs = attr("scan_input_directions", m),
                                  out_axes = attr("scan_output_axes", scans),
                                  out_dirs = attr("scan_output_directions", scans);
  std::vector<std::size_t> axis(m);
  std::int64_t length = -1;
  for (std::size_t j = 0; j < m; ++j) {
    const Tensor* in = inputs[states + j];
    const auto rank = static_cast<std::int64_t>(in ? in->dims.size() : 0);
    const std::int64_t a = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
    if (!in || a < 0 || a >= rank)
      throw Error(ErrorKind::kInvalidModel, where + ": scan input " + std::to_string(j) + " has no axis " +
                                                std::to_string(in_axes[j]));
    axis[j] = static_cast<std::size_t>(a);
    if (length >= 0 && in->dims[axis[j]] != length)
      throw Error(ErrorKind::kInvalidModel, where + ": its scan inputs have different lengths (" +
                                                std::to_string(length) + ", " + std::to_string(in->dims[axis[j]]) + ")");
    length = in->dims[axis[j]];
  }
  std::vector<Tensor> state;
  for (std::size_t k = 0; k < states; ++k) state.push_back(*inputs[k]);
  std::vector<std::vector<Tensor>> scanned(scans);
  const KnownValues outer = OuterValues(g, states + m, known);
  for (std::int64_t i = 0; i < length; ++i) {
    KnownValues feed = outer;
    for (std::size_t k = 0; k < states; ++k) feed[g.value(g.inputs()[k]).name] = state[k];
    for (std::size_t j = 0; j < m; ++j)
      feed[g.value(g.inputs()[states + j]).name] =
          SliceAlong(*inputs[states + j], axis[j], in_dirs[j] == 1 ? length - 1 - i : i);
    std::vector<Tensor> results = body.Run(std::move(feed));
    for (std::size_t k = 0; k < states; ++k) state[k] = std::move(results[k]);
    for (std::size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(results[states + k]));
  }
  std::vector<Tensor> outputs = std::move(state);
  for (std::size_t k = 0; k < scans; ++k) {
    const ValueId out = g.outputs()[states + k];
    const auto rank = static_cast<std::int64_t>(
        scanned[k].empty() ? g.value(out).type.dims.size() : scanned[k].front().dims.size()) + 1;
    const std::int64_t a = out_axes[k] < 0 ? out_axes[k] + rank : out_axes[k];
    if (a < 0 || a >= rank)
      throw Error(ErrorKind::kInvalidModel, where + ": scan output " + std::to_string(k) + " has no axis " +
                                                std::to_string(out_axes[k]));
    if (out_dirs[k] == 1) std::reverse(scanned[k].begin(), scanned[k].end());
    outputs.push_back(scanned[k].empty()
                          ? EmptyScanOutput(g, out, static_cast<std::size_t>(a))
                          : StackAlong(scanned[k], static_cast<std::size_t>(a), g.value(out).name, "Scan"));
  }
  return outputs;
}

}  // namespace onnxfuse::session
