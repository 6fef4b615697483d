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

// True when `perm` keeps every axis but swaps the last two (a key
// transposed for attention: [b, h, s, d] -> [b, h, d, s]).
bool SwapsLastTwo(const std::vector<std::int64_t>& perm) {
  const std::size_t r = perm.size();
  if (r < 2 || perm[r - 1] != static_cast<std::int64_t>(r - 2) || perm[r - 2] != static_cast<std::int64_t>(r - 1))
    return false;
  for (std::size_t d = 0; d + 2 < r; ++d)
    if (perm[d] != static_cast<std::int64_t>(d)) return false;
  return true;
}

// `count` row-major [rows, cols] matrices of `src` transposed into `dst`, in
// square tiles so that the strided side of each tile stays in a few cache
// lines: a plain row-by-row copy reads one element per line of the source.
template <typename T>
void TransposeMatrices(const T* src, T* dst, std::int64_t count, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t kTile = 16;
  for (std::int64_t m = 0; m < count; ++m, src += rows * cols, dst += rows * cols)
    for (std::int64_t r0 = 0; r0 < rows; r0 += kTile)
      for (std::int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const std::int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
        for (std::int64_t c = c0; c < c1; ++c)
          for (std::int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
      }
}

// Transpose (ONNX Operators.md, Transpose-13; no perm: the axes reversed).
Tensor Transpose(const Node& node, const Tensor& x) {
  auto perm = AttrInts(node, "perm");
  if (perm.empty())
    for (std::size_t d = x.dims.size(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
  if (perm.size() != x.dims.size()) InvalidNode(node, "perm has " + std::to_string(perm.size()) + " axes");
  const Dims is = DenseStrides(x.dims);
  Dims out, from;  // the output's dims, and the input stride each of them steps
  for (auto p : perm) out.push_back(x.dims[static_cast<std::size_t>(p)]), from.push_back(is[static_cast<std::size_t>(p)]);
  Tensor t;
  t.elem_type = x.elem_type, t.data_type = x.data_type, t.dims = out;
  // The output in rows of its last dim (a fixed source stride each), the
  // rows counted like an odometer: the source offset moves by the stride
  // of the digit that turns.
  auto transpose = [&](auto field) {
    const auto& src = x.*field;
    auto& dst = t.*field;
    dst.resize(static_cast<std::size_t>(Product(out)));
    if (out.empty() || dst.empty()) {  // a scalar is itself; an empty tensor has no rows
      std::copy(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(dst.size()), dst.begin());
      return;
    }
    const std::size_t last = out.size() - 1;
    if (SwapsLastTwo(perm)) {  // a batch of matrices, each transposed in tiles
      const std::int64_t rows = x.dims[last - 1], cols = x.dims[last];
      TransposeMatrices(src.data(), dst.data(), static_cast<std::int64_t>(dst.size()) / (rows * cols), rows, cols);
      return;
    }
    const std::int64_t row = out[last], step = from[last];
    std::vector<std::int64_t> index(out.size(), 0);
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < dst.size(); i += static_cast<std::size_t>(row)) {
      for (std::int64_t j = 0; j < row; ++j) dst[i + static_cast<std::size_t>(j)] = src[static_cast<std::size_t>(offset + j * step)];
      for (std::size_t d = last; d-- > 0;) {
        offset += from[d];
        if (++index[d] < out[d]) break;
        offset -= from[d] * out[d];
        index[d] = 0;
      }
    }
  };
  if (IsInt64(x)) transpose(&Tensor::int_data);
  else transpose(&Tensor::data);
  return t;
}

// Tile (ONNX Operators.md, Tile-13): dim d repeated repeats[d] times.
Tensor Tile(const Node& node, const Tensor& x, const std::vector<std::int64_t>& repeats) {
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
  return MakeHostTensor(IsInt64(x), out, values);
}

}  // namespace

bool IsHostLayoutOp(const std::string& op_type) {
  return op_type == "Split" || op_type == "Pad" || op_type == "Transpose" || op_type == "Expand" || op_type == "Tile";
}

std::optional<std::vector<Tensor>> EvalLayoutOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset) {
  if (node.op_type == "Split") return Split(node, inputs, opset);
  if (node.op_type == "Pad") return One(Pad(node, inputs, opset));
  if (node.op_type == "Transpose") return One(Transpose(node, NeedInput(node, inputs, 0)));
  if (node.op_type == "Expand") {  // elements copied as stored: int64 exactly
    const Tensor& x = NeedInput(node, inputs, 0);
    return One(BroadcastAsStored(x, BroadcastDims(x.dims, AsInts(NeedInput(node, inputs, 1)))));
  }
  if (node.op_type == "Tile") return One(Tile(node, NeedInput(node, inputs, 0), AsInts(NeedInput(node, inputs, 1))));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
