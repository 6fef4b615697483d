#include "eval/host_eval_layout.h"
#include "eval/host_eval_ops.h"

#include <algorithm>

#include "eval/dims.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// An element copied from `x` at flat index `from` (or `fill` when from < 0) into `values`.
void Take(const Tensor& x, std::int64_t from, double fill, std::vector<double>& values) {
  values.push_back(from < 0 ? fill : ElementAt(x, from));
}

// Split (Split-13: sizes from the `split` input; Split-2/11: the attribute;
// neither: equal parts, which must divide the axis).
std::vector<Tensor> Split(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  std::int64_t axis = AttrInt(node, "axis", 0);
  if (axis < -rank || axis >= rank) InvalidNode(node, "axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank;
  const std::int64_t length = x.dims[static_cast<std::size_t>(axis)];
  const auto parts = static_cast<std::int64_t>(node.outputs.size());
  std::vector<std::int64_t> sizes =
      opset >= 13 ? (in.size() > 1 && in[1] ? AsInts(*in[1]) : std::vector<std::int64_t>{}) : AttrInts(node, "split");
  if (sizes.empty()) {
    if (length % parts != 0)
      InvalidNode(node, "axis of " + std::to_string(length) + " does not split into " + std::to_string(parts) + " equal parts");
    sizes.assign(static_cast<std::size_t>(parts), length / parts);
  }
  std::int64_t total = 0;
  for (auto s : sizes) total += s < 0 ? length + 1 : s;  // a negative size fails the sum check
  if (static_cast<std::int64_t>(sizes.size()) != parts || total != length)
    InvalidNode(node, "split sizes do not add up to the axis length " + std::to_string(length) + " in " +
                      std::to_string(parts) + " parts");
  const std::int64_t outer = Product(Dims(x.dims.begin(), x.dims.begin() + axis));
  const std::int64_t inner = Product(Dims(x.dims.begin() + axis + 1, x.dims.end()));
  std::vector<Tensor> outputs;
  std::int64_t start = 0;
  for (std::int64_t size : sizes) {
    Dims dims = x.dims;
    dims[static_cast<std::size_t>(axis)] = size;
    std::vector<double> values;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = (o * length + start) * inner; i < (o * length + start + size) * inner; ++i)
        Take(x, i, 0, values);
    outputs.push_back(MakeHostTensor(IsInt64(x), dims, values));
    start += size;
  }
  return outputs;
}

// The source coordinate of output coordinate `c` (already shifted by the
// begin pad) in a dim of `n` elements, or -1 for the constant fill.
std::int64_t SourceCoord(std::int64_t c, std::int64_t n, const std::string& mode) {
  if (c >= 0 && c < n) return c;
  if (mode == "edge") return std::clamp<std::int64_t>(c, 0, n - 1);
  if (mode == "reflect") return c < 0 ? -c : 2 * (n - 1) - c;  // pads < n: checked by the caller
  return -1;
}

// Pad (Pad-11/13: pads and constant_value inputs; Pad-2: attributes), modes
// constant, reflect (the edge not repeated) and edge; negative pads crop.
Tensor Pad(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const std::size_t rank = x.dims.size();
  const std::vector<std::int64_t> pads = opset >= 11 ? AsInts(NeedInput(node, in, 1)) : AttrInts(node, "pads");
  double fill = opset >= 11 ? (in.size() > 2 && in[2] && in[2]->NumElements() > 0 ? ElementAt(*in[2], 0) : 0.0)
                            : static_cast<double>(AttrFloat(node, "value", 0.f));
  const std::string mode = AttrString(node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") InvalidNode(node, "unknown mode '" + mode + "'");
  if (pads.size() != 2 * rank)
    InvalidNode(node, std::to_string(pads.size()) + " pads for an input of rank " + std::to_string(rank));
  Dims out(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    out[d] = x.dims[d] + pads[d] + pads[d + rank];
    if (out[d] < 0) InvalidNode(node, "pads crop dim " + std::to_string(d) + " below 0");
    if (mode == "reflect" && (pads[d] >= x.dims[d] || pads[d + rank] >= x.dims[d]) && (pads[d] > 0 || pads[d + rank] > 0))
      InvalidNode(node, "reflect pads of dim " + std::to_string(d) + " reach past the input's edge");
    if (mode != "constant" && x.dims[d] == 0 && out[d] > 0) InvalidNode(node, mode + " pads of an empty dim");
  }
  const Dims in_strides = DenseStrides(x.dims), out_strides = DenseStrides(out);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(Product(out)));
  for (std::int64_t i = 0; i < Product(out); ++i) {
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank && from >= 0; ++d) {
      const std::int64_t c = SourceCoord(i / out_strides[d] % out[d] - pads[d], x.dims[d], mode);
      from = c < 0 ? -1 : from + c * in_strides[d];
    }
    Take(x, from, fill, values);
  }
  return MakeHostTensor(IsInt64(x), out, values);
}

}  // namespace

bool IsHostLayoutOp(const std::string& op_type) { return op_type == "Split" || op_type == "Pad"; }

std::optional<std::vector<Tensor>> EvalLayoutOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset) {
  if (node.op_type == "Split") return Split(node, inputs, opset);
  if (node.op_type == "Pad") return One(Pad(node, inputs, opset));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
