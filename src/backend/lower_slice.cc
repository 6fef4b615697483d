// Pad, Slice and Gather of run-time tensors, as reorders between a plain
// tensor and a sub-memory view of another (oneDNN's submemory_desc):
//   Slice (steps 1)      reorder view(x, starts) -> y
//   Gather (one index,   the same slice of width 1 (or a contiguous run of
//     or a run k..k+n)    indices), then a view without the gathered axis
//   Pad (constant mode)  a fill of y, then reorder x -> view(y, pads_begin);
//                        all-zero pads are a view of x
#include <algorithm>

#include "attrs.h"
#include "host_eval.h"
#include "lower.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

[[noreturn]] void Unsupported(const Builder& b, const Node& node, const std::string& why) {
  throw Error(ErrorKind::kUnsupported, b.graph.source_path() + ": " + NodeLabel(node) + ": " + why);
}

std::vector<std::int64_t> ConstInts(Builder& b, const Node& node, std::size_t i) {
  if (node.num_explicit_inputs <= i || node.inputs[i] == kNoValue) return {};
  return AsInts(b.Const(node.inputs[i], node));
}

std::int64_t NormAxis(const Builder& b, const Node& node, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) Unsupported(b, node, "axis out of range");
  return axis < 0 ? axis + r : axis;
}

// y = x[offsets : offsets + dims] (a reorder from a sub-memory view of plain x).
Act EmitSubTensor(Builder& b, const Node& node, const Dims& dims, const Dims& offsets) {
  Arg src = b.UsePlain(node.inputs[0], node);
  src.md = src.md.submemory_desc(dims, offsets);
  Act dst = b.NewAct(dims, PlainDesc(dims));
  dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, dst.md, b.Attr());
  b.Emit(pd, "slice", node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, dst.md, {}}}}, dst.md);
  return dst;
}

void LowerPad(Builder& b, const Node& node, const Dims& in) {
  if (AttrString(node, "mode", "constant") != "constant") Unsupported(b, node, "only constant padding");
  std::vector<std::int64_t> pads = b.graph.opset() >= 11 ? ConstInts(b, node, 1) : AttrInts(node, "pads");
  float value = 0;
  if (b.graph.opset() >= 11 && node.num_explicit_inputs > 2 && node.inputs[2] != kNoValue)
    value = static_cast<float>(ElementAt(b.Const(node.inputs[2], node), 0));
  else if (b.graph.opset() < 11) value = AttrFloat(node, "value", 0.f);
  if (node.num_explicit_inputs > 3) Unsupported(b, node, "the axes input is not supported");
  if (pads.size() != 2 * in.size()) Unsupported(b, node, "pads must list every axis twice");
  Dims out = in, begin(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(in.size()));
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (pads[d] < 0 || pads[d + in.size()] < 0) Unsupported(b, node, "negative pads");
    out[d] += pads[d] + pads[d + in.size()];
  }
  if (out == in) {  // nothing to pad: the same tensor, in any layout
    Arg src = b.UseAsIs(node.inputs[0], node);
    b.SetAct(node.outputs[0], Act{src.slot, src.md, in});
    return;
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  Act dst = b.NewAct(out, PlainDesc(out));
  const std::int64_t n = Product(out);
  b.EmitCustom("fill", node.name, {{0, Arg{dst.slot, dst.md, {}}}},
               [n, value](const std::vector<void*>& data) { std::fill_n(static_cast<float*>(data[0]), n, value); },
               dst.md);
  Arg inner{dst.slot, dst.md.submemory_desc(in, begin), {}};
  dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, inner.md, b.Attr());
  b.Emit(pd, "pad", node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, inner}}, dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace

bool LowerSlice(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  if (!node.domain.empty() || (op != "Pad" && op != "Slice" && op != "Gather") || !b.IsAct(node.inputs.at(0)))
    return false;
  const Dims in = b.ActOf(node.inputs[0], node).dims;
  if (op == "Pad") {
    LowerPad(b, node, in);
    return true;
  }
  Dims dims = in, offsets(in.size(), 0);
  if (op == "Slice") {
    std::vector<std::int64_t> starts, ends, axes, steps;
    if (b.graph.opset() < 10) {
      starts = AttrInts(node, "starts"), ends = AttrInts(node, "ends"), axes = AttrInts(node, "axes");
    } else {
      starts = ConstInts(b, node, 1), ends = ConstInts(b, node, 2), axes = ConstInts(b, node, 3);
      steps = ConstInts(b, node, 4);
    }
    for (std::size_t k = 0; k < starts.size(); ++k) {
      auto axis = static_cast<std::size_t>(NormAxis(b, node, axes.empty() ? static_cast<std::int64_t>(k) : axes[k], in.size()));
      if (!steps.empty() && steps[k] != 1) Unsupported(b, node, "steps other than 1");
      std::int64_t n = in[axis], s = starts[k] < 0 ? starts[k] + n : starts[k], e = ends[k] < 0 ? ends[k] + n : ends[k];
      s = std::clamp<std::int64_t>(s, 0, n), e = std::clamp<std::int64_t>(e, s, n);
      offsets[axis] = s, dims[axis] = e - s;
    }
    b.SetAct(node.outputs[0], EmitSubTensor(b, node, dims, offsets));
    return true;
  }
  // Gather with constant indices forming one contiguous ascending run.
  if (!b.IsConst(node.inputs.at(1))) Unsupported(b, node, "indices must be constant");
  const Tensor& indices = b.Const(node.inputs[1], node);
  auto axis = static_cast<std::size_t>(NormAxis(b, node, AttrInt(node, "axis", 0), in.size()));
  auto idx = AsInts(indices);
  for (auto& k : idx) k = k < 0 ? k + in[axis] : k;
  for (std::size_t i = 1; i < idx.size(); ++i)
    if (idx[i] != idx[0] + static_cast<std::int64_t>(i)) Unsupported(b, node, "indices must be a contiguous run");
  if (idx.empty() || idx[0] < 0 || idx.back() >= in[axis]) Unsupported(b, node, "indices out of range");
  offsets[axis] = idx[0], dims[axis] = static_cast<std::int64_t>(idx.size());
  Act sub = EmitSubTensor(b, node, dims, offsets);
  Dims out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(axis) + 1, in.end());
  b.SetAct(node.outputs[0], Act{sub.slot, PlainDesc(out), out});
  return true;
}

}  // namespace onnxfuse::backend
