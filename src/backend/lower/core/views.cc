// Build-time folding (constants, Shape of known dims) and layout-only ops:
// Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout are views of
// their input's buffer when it is laid out row-major (otherwise one reorder to
// plain first); Transpose is one reorder through a permuted-strides descriptor
// (fused: a view with those strides), and so are DepthToSpace and SpaceToDepth.
#include "backend/lower/core/views.h"

#include <algorithm>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/unsupported.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

std::int64_t Axis(const Builder& b, const Node& node, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= std::max<std::int64_t>(r, 1))
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": axis out of range");
  return axis < 0 ? axis + r : axis;
}


// Output dims of a view op, or nullopt when the op is not a view.
std::optional<Dims> ViewDims(Builder& b, const Node& node, const Dims& in) {
  const std::string& op = node.op_type;
  if (op == "Identity" || op == "Dropout") return in;
  // Activations are f32: a Cast to float of one (LayerNormalization's stash-type
  // cast in its function body) changes nothing.
  if (op == "Cast" && AttrInt(node, "to", 0) == onnx::TensorProto::FLOAT) return in;
  if (op == "Flatten") {
    // Flatten's axis is in [-r, r]; a negative one counts from r (ONNX Operators.md, Flatten).
    std::int64_t axis = AttrInt(node, "axis", 1);
    if (axis < 0) axis += static_cast<std::int64_t>(in.size());
    axis = Axis(b, node, axis, in.size() + 1);
    std::int64_t outer = Product(Dims(in.begin(), in.begin() + axis));
    return Dims{outer, Product(in) / std::max<std::int64_t>(outer, 1)};
  }
  auto axes = [&]() {
    if (b.graph.opset() >= 13 && node.num_explicit_inputs > 1 && node.inputs[1] != kNoValue)
      return eval::AsInts(b.Const(node.inputs[1], node));
    return AttrInts(node, "axes");
  };
  if (op == "Reshape") {
    // The host evaluator's rules (0 = copy, -1 = infer, allowzero).
    return eval::ReshapeDims(node, in, eval::AsInts(b.Const(node.inputs.at(1), node)));
  }
  if (op == "Unsqueeze") {
    Dims out = in;
    auto list = axes();
    for (auto& a : list) a = Axis(b, node, a, in.size() + list.size());
    std::sort(list.begin(), list.end());
    for (auto a : list) out.insert(out.begin() + a, 1);
    return out;
  }
  if (op == "Squeeze") {
    auto list = axes();
    for (auto& a : list) a = Axis(b, node, a, in.size());
    Dims out;
    for (std::size_t d = 0; d < in.size(); ++d) {
      bool drop = list.empty() ? in[d] == 1
                               : std::find(list.begin(), list.end(), static_cast<std::int64_t>(d)) != list.end();
      if (!drop) out.push_back(in[d]);
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace

void RefuseNonIdentityDropout(Builder& b, const Node& node) {
  const ValueId ratio = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  const ValueId mode = node.inputs.size() > 2 ? node.inputs[2] : kNoValue;
  if (mode == kNoValue) return;
  if (!b.IsConst(mode))
    Unsupported(b, node, "training_mode must be a constant: random dropping (training) is not supported");
  const Tensor* known_ratio = ratio != kNoValue && b.IsConst(ratio) ? &b.Const(ratio, node) : nullptr;
  if (eval::DropoutDrops(known_ratio, &b.Const(mode, node)))
    Unsupported(b, node, "training_mode is true and ratio above 0: random dropping (training) is not supported");
}

bool TryFold(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!node.domain.empty() || node.outputs.empty()) return false;
  // Folded before (PrefoldConstants). A Constant node's output counts as
  // constant from the start, but only its evaluation reads value_float & co.
  if (node.op_type != "Constant" &&
      std::all_of(node.outputs.begin(), node.outputs.end(), [&](ValueId v) { return v == kNoValue || b.IsConst(v); }))
    return true;
  if (node.op_type == "Shape" || node.op_type == "Size") {  // static shapes make both build-time constants
    if (!b.IsAct(node.inputs.at(0)) && !b.IsConst(node.inputs[0])) return false;
    b.SetConst(node.outputs[0], eval::ShapeOrSize(node, b.DimsOfValue(node.inputs[0], node)));
    return true;
  }
  if (!eval::HostEvaluable(node)) return false;
  // Every input known first: decoding a constant (an embedding table read by a
  // Gather of run-time ids) is wasted when another input is not.
  const auto first = node.inputs.begin(), last = first + static_cast<std::ptrdiff_t>(node.num_explicit_inputs);
  if (!std::all_of(first, last, [&](ValueId v) { return v == kNoValue || b.IsConst(v); })) return false;
  std::vector<const Tensor*> inputs;
  for (auto v = first; v != last; ++v) {
    if (*v == kNoValue) {
      inputs.push_back(nullptr);
      continue;
    }
    // A table a fold selects rows from (position embeddings gathered by
    // position ids, at every sequence length) is decoded once for every
    // compile of the model (Builder::SharedConst), not once per shape.
    const bool table = v == first && (node.op_type == "Gather" || node.op_type == "Slice");
    inputs.push_back(table ? b.SharedConst(*v, node).get() : &b.Const(*v, node));
  }
  auto outputs = eval::EvalAsDeclared(b.graph, node, inputs);
  for (std::size_t i = 0; i < outputs.size() && i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) b.SetConst(node.outputs[i], std::move(outputs[i]));
  return true;
}

void PrefoldConstants(Builder& b) {
  b.fold = TryFold;
  // TryFold evaluates a host-evaluable node only when all its inputs are known.
  // A DequantizeLinear of constants is evaluated when first read: an int8
  // convolution reads its integer weights instead, and the float ones (four
  // times the bytes) would only raise the compiler's peak memory.
  for (NodeId id = 0; id < b.graph.num_nodes(); ++id) {
    const Node& node = b.graph.node(id);
    if (!eval::HostEvaluable(node)) continue;
    const auto first = node.inputs.begin(), last = first + static_cast<std::ptrdiff_t>(node.num_explicit_inputs);
    if (node.op_type == "DequantizeLinear" && node.outputs.size() == 1 && !b.IsConst(node.outputs[0]) &&
        std::all_of(first, last, [&](ValueId v) { return v == kNoValue || b.IsConst(v); }))
      b.DeferFold(node.outputs[0], id);
    else
      TryFold(b, id);
  }
}

namespace {

// DepthToSpace and SpaceToDepth (ONNX Operators.md: reshape, transpose,
// reshape) as one reorder: the output, plain, seen as 6-D, and the input read
// in the same element order through permuted strides. b = blocksize.
//   DepthToSpace DCR: x [N, b, b, C, H, W] -> y [N, C, H, b, W, b]
//   DepthToSpace CRD: x [N, C, b, b, H, W] -> y [N, C, H, b, W, b]
//   SpaceToDepth:     x [N, C, H, b, W, b] -> y [N, b, b, C, H, W]
void LowerDepthSpace(Builder& b, const Node& node, const Dims& in) {
  const std::int64_t k = AttrInt(node, "blocksize", 0);
  if (in.size() != 4 || k < 1) Unsupported(b, node, "needs a 4-D input and a blocksize of at least 1");
  const bool to_space = node.op_type == "DepthToSpace";
  const std::int64_t n = in[0];
  if (to_space ? in[1] % (k * k) != 0 : in[2] % k != 0 || in[3] % k != 0)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": dims " + DimsString(in) +
                                              " do not divide by the blocksize");
  Dims out, y6, x6;  // y6: output dims as 6-D; x6: the input's 6-D dims, in its own order
  std::vector<int> order;  // for each of y6's axes, its axis in x6
  if (to_space) {
    const std::int64_t c = in[1] / (k * k), h = in[2], w = in[3];
    out = {n, c, h * k, w * k}, y6 = {n, c, h, k, w, k};
    if (AttrString(node, "mode", "DCR") == "DCR") x6 = {n, k, k, c, h, w}, order = {0, 3, 4, 1, 5, 2};
    else x6 = {n, c, k, k, h, w}, order = {0, 1, 4, 2, 5, 3};
  } else {
    const std::int64_t c = in[1], h = in[2] / k, w = in[3] / k;
    out = {n, c * k * k, h, w}, y6 = {n, k, k, c, h, w};
    x6 = {n, c, h, k, w, k}, order = {0, 3, 5, 1, 2, 4};
  }
  const dnnl::memory::desc x_md = PlainDesc(x6);
  Dims strides;
  for (int axis : order) strides.push_back(x_md.data.format_desc.blocking.strides[axis]);
  Arg src = b.UsePlain(node.inputs[0], node);
  src.md = dnnl::memory::desc(y6, DataType::f32, strides);
  Act dst = b.NewAct(out, PlainDesc(out));
  const Arg to{dst.slot, PlainDesc(y6), {}};
  dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, to.md, b.Attr());
  b.Emit(pd, to_space ? "depth_to_space" : "space_to_depth", node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, to}}, dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace

bool LowerView(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!node.domain.empty() || node.inputs.empty() || node.outputs.empty() || !b.IsAct(node.inputs[0])) return false;
  const Dims in = b.ActOf(node.inputs[0], node).dims;
  if (node.op_type == "DepthToSpace" || node.op_type == "SpaceToDepth") {
    LowerDepthSpace(b, node, in);
    return true;
  }
  if (node.op_type == "Transpose") {
    Dims perm = AttrInts(node, "perm");
    if (perm.empty())
      for (std::size_t d = in.size(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
    if (perm.size() != in.size())
      throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": perm has wrong rank");
    // Fused: a transpose of a tensor without inner blocks is a view with
    // permuted strides (NHWC memory transposed to [N,H,W,C] is already plain);
    // a consumer that needs another layout reorders it.
    const Act& have = b.ActOf(node.inputs[0], node);
    bool strided = have.md.data.format_kind == dnnl_blocked && have.md.data.format_desc.blocking.inner_nblks == 0;
    Arg src = b.fuse && strided ? b.UseAsIs(node.inputs[0], node) : b.UsePlain(node.inputs[0], node);
    const auto& blk = src.md.data.format_desc.blocking;
    Dims out, out_strides;
    for (auto p : perm) {
      auto axis = static_cast<std::size_t>(Axis(b, node, p, in.size()));
      out.push_back(in[axis]);
      out_strides.push_back(blk.strides[axis]);
    }
    src.md = dnnl::memory::desc(out, DataType::f32, out_strides);  // the input read in output order
    if (b.fuse) {
      if (IsPlainEquivalent(src.md)) src.md = PlainDesc(out);
      b.SetAct(node.outputs[0], Act{src.slot, src.md, out});
      return true;
    }
    auto dst_md = PlainDesc(out);
    Act dst = b.NewAct(out, dst_md);
    dnnl::reorder::primitive_desc pd(b.engine, src.md, b.engine, dst_md, b.Attr());
    b.Emit(pd, "transpose", node.name, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, dst_md, {}}}}, dst_md);
    b.SetAct(node.outputs[0], dst);
    return true;
  }
  auto out = ViewDims(b, node, in);
  if (!out) return false;
  if (node.op_type == "Dropout") RefuseNonIdentityDropout(b, node);
  if (*out == in) {  // Identity, Dropout, a no-op reshape: the same tensor, in any layout
    Arg src = b.UseAsIs(node.inputs[0], node);
    b.SetAct(node.outputs[0], Act{src.slot, src.md, in});
    return true;
  }
  // Fused: a strided tensor (NHWC, a transpose) that can be re-viewed without
  // a copy stays where it is (e.g. NHWC [1,C,H,W] -> [1,C,H*W]).
  const Act& have = b.ActOf(node.inputs[0], node);
  const auto& d = have.md.data;
  if (b.fuse && d.format_kind == dnnl_blocked && d.format_desc.blocking.inner_nblks == 0 && !IsPlainEquivalent(have.md)) {
    Dims strides(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
    if (auto view = ReshapeStrides(in, strides, *out)) {
      b.SetAct(node.outputs[0], Act{have.slot, dnnl::memory::desc(*out, DataType::f32, *view), *out});
      return true;
    }
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  b.SetAct(node.outputs[0], Act{src.slot, PlainDesc(*out), *out});
  return true;
}

}  // namespace onnxfuse::backend
