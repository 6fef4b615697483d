// Pad, Slice, Split and Gather of run-time tensors. Fused, a sub-tensor with
// steps >= 1 (Slice, each part of a Split, a Gather of one run of indices) is
// a view of x's buffer, no step: x's strides times the steps, from the first
// selected element (Builder::NewView; x is made plain first when it has
// inner blocks); a reader that cannot take its strides reorders it. Unfused,
// and otherwise, as reorders between a plain tensor and a (strided)
// sub-memory view of another:
//   Slice, steps >= 1     reorder view(x, offset = starts, strides * steps) -> y
//   Split                 one reorder view(x, offset of part i) -> y_i per output
//   Slice, a step < 0     a parallel copy loop (oneDNN descriptors take no
//                         negative strides)
//   Gather, constant      x viewed as [outer, n, inner] (n the gathered axis);
//     indices (negative   each run of consecutive ascending indices k..k+m is
//     ones count from     one reorder of view(x, [., k, .]) into view(y, [., j, .]);
//     the end)            a single run is the Slice case, y a view of it with
//                         the indices' dims; more than kMaxGatherRuns runs:
//                         a parallel row-copy loop
//   Pad (constant mode)   a fill of y, then reorder x -> view(y, pads_begin);
//                         all-zero pads are a view of x
// Slice's starts/ends/axes/steps clamp as ONNX Operators.md says (Slice-13):
// step > 0: start and end in [0, n]; step < 0: start in [0, n-1], end in [-1, n-1].
#include "backend/lower/ops/slice.h"

#include <algorithm>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/dims.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/unsupported.h"
#include "backend/lower/ops/gather_rows.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

std::vector<std::int64_t> ConstInts(Builder& b, const Node& node, std::size_t i) {
  if (node.num_explicit_inputs <= i || node.inputs[i] == kNoValue) return {};
  return eval::AsInts(b.Const(node.inputs[i], node));
}

std::int64_t NormAxis(const Builder& b, const Node& node, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) Unsupported(b, node, "axis out of range");
  return axis < 0 ? axis + r : axis;
}

// y = x[offsets : offsets + dims] (a reorder from a sub-memory view of plain x).
Act EmitSubTensor(Builder& b, const Node& node, const Dims& dims, const Dims& offsets, const char* kind = "slice") {
  Arg src = b.UsePlain(node.inputs[0], node);
  src.md = src.md.submemory_desc(dims, offsets);
  Act dst = b.NewAct(dims, PlainDesc(dims));
  dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, dst.md, b.Attr());
  b.Emit(pd, kind, node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, dst.md, {}}}}, dst.md);
  return dst;
}

// Strides of a plain (row-major) tensor of `dims`, in elements.
Dims PlainStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// Fused: y = x[begin + i * step] (each step >= 1) as a view of x's buffer;
// nullopt when oneDNN cannot describe it (StridesDescribable; never for unit
// steps, a sub-block of x).
std::optional<Act> SubTensorView(Builder& b, const Node& node, const Dims& dims, const Dims& begin, const Dims& step) {
  const auto& have = b.ActOf(node.inputs[0], node).md.data;
  const bool strided = have.format_kind == dnnl_blocked && have.format_desc.blocking.inner_nblks == 0;
  const Dims have_strides = strided ? Dims(have.format_desc.blocking.strides, have.format_desc.blocking.strides + dims.size())
                                    : PlainStrides(b.ActOf(node.inputs[0], node).dims);
  Dims strides(dims.size());
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) strides[d] = have_strides[d] * step[d], offset += begin[d] * have_strides[d];
  if (!StridesDescribable(dims, strides)) return std::nullopt;
  Arg src = strided ? b.UseAsIs(node.inputs[0], node) : b.UsePlain(node.inputs[0], node);
  return b.NewView(src.slot, offset * static_cast<std::int64_t>(sizeof(float)), dims,
                   dnnl::memory::desc(dims, DataType::f32, strides));
}

// Constant padding by amounts known now, none negative: a copy into a filled
// buffer (below). Reflect and edge modes, negative pads (crops) and pads
// computed at run time are host steps (host_eval_layout.h).
bool PadIsCopy(Builder& b, const Node& node) {
  if (AttrString(node, "mode", "constant") != "constant") return false;
  if (b.graph.opset() < 11) {
    const auto pads = AttrInts(node, "pads");
    return std::none_of(pads.begin(), pads.end(), [](auto p) { return p < 0; });
  }
  if (node.num_explicit_inputs < 2 || !b.IsConst(node.inputs[1])) return false;
  const auto pads = eval::AsInts(b.Const(node.inputs[1], node));
  return std::none_of(pads.begin(), pads.end(), [](auto p) { return p < 0; });
}

void LowerPad(Builder& b, const Node& node, const Dims& in) {
  std::vector<std::int64_t> pads = b.graph.opset() >= 11 ? ConstInts(b, node, 1) : AttrInts(node, "pads");
  float value = 0;
  if (b.graph.opset() >= 11 && node.num_explicit_inputs > 2 && node.inputs[2] != kNoValue)
    value = static_cast<float>(eval::ElementAt(b.Const(node.inputs[2], node), 0));
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

// An output with no elements: a buffer of no bytes, no step.
void SetEmpty(Builder& b, const Node& node, const Dims& out, std::size_t output = 0) {
  b.SetAct(node.outputs[output], b.NewAct(out, PlainDesc(out)));
}

void LowerStridedSlice(Builder& b, const Node& node, const Dims& in) {
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (b.graph.opset() < 10) {
    starts = AttrInts(node, "starts"), ends = AttrInts(node, "ends"), axes = AttrInts(node, "axes");
  } else {
    starts = ConstInts(b, node, 1), ends = ConstInts(b, node, 2), axes = ConstInts(b, node, 3);
    steps = ConstInts(b, node, 4);
  }
  if (ends.size() != starts.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    Unsupported(b, node, "starts, ends, axes and steps differ in length");
  Dims out = in, begin(in.size(), 0), step(in.size(), 1);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    auto axis = static_cast<std::size_t>(NormAxis(b, node, axes.empty() ? static_cast<std::int64_t>(k) : axes[k], in.size()));
    const std::int64_t n = in[axis], st = steps.empty() ? 1 : steps[k];
    if (st == 0) throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": a step of 0");
    std::int64_t s = starts[k] < 0 ? starts[k] + n : starts[k], e = ends[k] < 0 ? ends[k] + n : ends[k];
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, n), e = std::clamp<std::int64_t>(e, 0, n);
      out[axis] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<std::int64_t>(s, 0, n - 1), e = std::clamp<std::int64_t>(e, -1, n - 1);
      out[axis] = s > e ? (s - e - st - 1) / -st : 0;
    }
    begin[axis] = s, step[axis] = st;
  }
  if (Product(out) == 0) return SetEmpty(b, node, out);
  const bool positive = std::all_of(step.begin(), step.end(), [](std::int64_t st) { return st > 0; });
  if (b.fuse && positive)
    if (std::optional<Act> view = SubTensorView(b, node, out, begin, step)) return b.SetAct(node.outputs[0], *view);
  if (std::all_of(step.begin(), step.end(), [](std::int64_t st) { return st == 1; })) {
    b.SetAct(node.outputs[0], EmitSubTensor(b, node, out, begin));
    return;
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  Act dst = b.NewAct(out, PlainDesc(out));
  const Dims is = PlainStrides(in);
  Dims strides(in.size());
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < in.size(); ++d) strides[d] = is[d] * step[d], offset += begin[d] * is[d];
  if (positive && StridesDescribable(out, strides)) {
    // x read through strides * steps from the first selected element: one reorder.
    dnnl::memory::desc view(out, DataType::f32, strides);
    view.data.offset0 = offset;
    src.md = view;
    dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, dst.md, b.Attr());
    b.Emit(pd, "slice", node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, dst.md, {}}}}, dst.md);
  } else {
    const std::int64_t inner = out.back(), rows = Product(out) / inner;
    b.EmitCustom("slice", node.name, {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
                 [out, begin, step, is, inner, rows](const std::vector<void*>& data) {
                   const auto* x = static_cast<const float*>(data[0]);
                   auto* y = static_cast<float*>(data[1]);
                   const std::size_t last = out.size() - 1;
                   const std::int64_t jump = step[last] * is[last];
#pragma omp parallel for schedule(static)
                   for (std::int64_t r = 0; r < rows; ++r) {
                     std::int64_t rest = r, from = begin[last] * is[last];
                     for (std::size_t d = last; d-- > 0;) {
                       from += (begin[d] + rest % out[d] * step[d]) * is[d];
                       rest /= out[d];
                     }
                     float* row = y + r * inner;
                     for (std::int64_t j = 0; j < inner; ++j) row[j] = x[from + j * jump];
                   }
                 },
                 dst.md);
  }
  b.SetAct(node.outputs[0], dst);
}

// Split (ONNX Split-13; before, the sizes are the `split` attribute): the
// sizes given, or equal parts; output i = x[.., offset_i : offset_i + size_i, ..].
void LowerSplit(Builder& b, const Node& node, const Dims& in) {
  auto axis = static_cast<std::size_t>(NormAxis(b, node, AttrInt(node, "axis", 0), in.size()));
  std::vector<std::int64_t> sizes;
  if (b.graph.opset() < 13) {
    sizes = AttrInts(node, "split");
  } else if (node.num_explicit_inputs > 1 && node.inputs[1] != kNoValue) {
    if (!b.IsConst(node.inputs[1])) Unsupported(b, node, "the split sizes must be constant");
    sizes = ConstInts(b, node, 1);
  }
  const std::size_t parts = node.outputs.size();
  auto invalid = [&](const std::string& why) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + why);
  };
  if (sizes.empty()) {
    if (in[axis] % static_cast<std::int64_t>(parts) != 0)
      invalid("an axis of " + std::to_string(in[axis]) + " does not split into " + std::to_string(parts) + " equal parts");
    sizes.assign(parts, in[axis] / static_cast<std::int64_t>(parts));
  }
  if (sizes.size() != parts) invalid(std::to_string(sizes.size()) + " split sizes for " + std::to_string(parts) + " outputs");
  std::int64_t total = 0;
  for (std::int64_t size : sizes) {
    if (size < 0) invalid("a negative split size");
    total += size;
  }
  if (total != in[axis]) invalid("split sizes add up to " + std::to_string(total) + ", not the axis' " + std::to_string(in[axis]));
  Dims offsets(in.size(), 0);
  for (std::size_t i = 0; i < parts; ++i) {
    Dims dims = in;
    dims[axis] = sizes[i];
    if (node.outputs[i] != kNoValue) {
      if (Product(dims) == 0) SetEmpty(b, node, dims, i);
      else if (b.fuse) b.SetAct(node.outputs[i], SubTensorView(b, node, dims, offsets, Dims(in.size(), 1)).value());
      else b.SetAct(node.outputs[i], EmitSubTensor(b, node, dims, offsets, "split"));
    }
    offsets[axis] += sizes[i];
  }
}

constexpr std::size_t kMaxGatherRuns = 8;  // more runs of indices: one copy loop instead of a reorder each

void LowerGather(Builder& b, const Node& node, const Dims& in) {
  if (!b.IsConst(node.inputs.at(1))) Unsupported(b, node, "indices must be constant");
  const Tensor& indices = b.Const(node.inputs[1], node);
  auto axis = static_cast<std::size_t>(NormAxis(b, node, AttrInt(node, "axis", 0), in.size()));
  const std::int64_t n = in[axis];
  auto idx = eval::AsInts(indices);
  for (auto& k : idx) {
    if (k < -n || k >= n)
      throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": index " +
                                                std::to_string(k) + " out of range for an axis of " + std::to_string(n));
    if (k < 0) k += n;
  }
  const eval::GatherExtents extents = eval::GatherExtentsOf(in, axis, indices.dims);
  const Dims& out = extents.out;
  if (Product(out) == 0) return SetEmpty(b, node, out);
  // Runs of consecutive ascending indices: (first index, position in idx, length).
  struct Run {
    std::int64_t first, at, length;
  };
  std::vector<Run> runs;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (!runs.empty() && idx[i] == runs.back().first + runs.back().length) ++runs.back().length;
    else runs.push_back({idx[i], static_cast<std::int64_t>(i), 1});
  }
  if (runs.size() == 1) {  // one sub-tensor, then a view with the indices' dims
    Dims dims = in, offsets(in.size(), 0);
    offsets[axis] = idx[0], dims[axis] = static_cast<std::int64_t>(idx.size());
    if (!b.fuse) {
      Act sub = EmitSubTensor(b, node, dims, offsets);
      b.SetAct(node.outputs[0], Act{sub.slot, PlainDesc(out), out});
      return;
    }
    Act sub = SubTensorView(b, node, dims, offsets, Dims(in.size(), 1)).value();  // unit steps: describable
    const auto& blk = sub.md.data.format_desc.blocking;
    // Only the gathered axis changes (into the indices' dims): always a view.
    auto strides = ReshapeStrides(dims, Dims(blk.strides, blk.strides + dims.size()), out);
    Check(strides.has_value(), "a gathered run cannot be viewed with the indices' dims");
    if (out.empty()) strides = Dims{1};  // a scalar: one element, as PlainDesc spells it
    b.SetAct(node.outputs[0], Act{sub.slot, dnnl::memory::desc(out.empty() ? Dims{1} : out, DataType::f32, *strides), out});
    return;
  }
  const std::int64_t outer = extents.outer, inner = extents.inner, count = extents.count;
  Arg src = b.UsePlain(node.inputs[0], node);
  Act dst = b.NewAct(out, PlainDesc(out));
  if (runs.size() <= kMaxGatherRuns) {
    const dnnl::memory::desc x3 = PlainDesc({outer, n, inner}), y3 = PlainDesc({outer, count, inner});
    for (const Run& run : runs) {
      Arg from{src.slot, x3.submemory_desc({outer, run.length, inner}, {0, run.first, 0}), {}};
      Arg to{dst.slot, y3.submemory_desc({outer, run.length, inner}, {0, run.at, 0}), {}};
      dnnl::reorder::primitive_desc pd(b.engine, from.md, b.engine, to.md, b.Attr());
      b.Emit(pd, "gather", node.name, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, dst.md);
    }
  } else {
    b.EmitCustom("gather", node.name, {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
                 [idx, outer, n, inner, count](const std::vector<void*>& data) {
                   GatherRows(static_cast<const float*>(data[0]), idx.data(), count, outer, n, inner,
                              static_cast<float*>(data[1]));
                 },
                 dst.md);
  }
  b.SetAct(node.outputs[0], dst);
}

}  // namespace

bool LowerSlice(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  if (!node.domain.empty() || (op != "Pad" && op != "Slice" && op != "Gather" && op != "Split") ||
      !b.IsAct(node.inputs.at(0)) || (op == "Pad" && !PadIsCopy(b, node)))
    return false;
  const Dims in = b.ActOf(node.inputs[0], node).dims;
  if (op == "Pad") LowerPad(b, node, in);
  else if (op == "Slice") LowerStridedSlice(b, node, in);
  else if (op == "Split") LowerSplit(b, node, in);
  else LowerGather(b, node, in);
  return true;
}

}  // namespace onnxfuse::backend
