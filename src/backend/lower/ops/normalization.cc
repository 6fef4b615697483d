// The ONNX normalization ops, each one step on a plain view of its input (no
// copy):
//
//   LayerNormalization (opset 17), X [d0..d(r-1)], axis a (default -1):
//     statistics over d(a)..d(r-1) for each index of d0..d(a-1);
//     Scale and B broadcast to d(a)..d(r-1) (B optional).
//     -> our LayerNorm kernel (backend/kernels/layer_norm.h, sums in double)
//        on the view [rows, cols], rows = d0*..*d(a-1), cols = d(a)*..*d(r-1),
//        scale/shift [cols]. Mean and InvStdDev (shape d0..d(a-1), 1, .., 1),
//        when read, are written by the same step.
//     stash_type other than 1 (float) is refused.
//   InstanceNormalization, X [N, C, D1..Dk]: statistics over D1..Dk for each
//     (n, c); scale and B [C].
//     -> batch_normalization_forward (statistics computed, not global) on the
//        view [1, N*C, D1*..*Dk, 1], whose channels are the instances; scale and
//        B tiled N times.
// Both compute the biased variance, as ONNX does.
#include "backend/lower/ops/normalization.h"

#include "eval/host_eval.h"
#include "backend/lower/fused/layer_norm.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// Input `i` of `node` (absent: `fill`) broadcast to `shape`, as a [Product(shape)]
// f32 argument: a constant on the host, or a run-time tensor of exactly that
// many elements read through a plain view.
Arg ParamArg(Builder& b, const Node& node, std::size_t i, const Dims& shape, float fill) {
  const std::int64_t n = Product(shape);
  const memory::desc md = PlainDesc({n});
  ValueId v = node.num_explicit_inputs > i ? node.inputs[i] : kNoValue;
  if (v == kNoValue) {
    std::vector<float> values(static_cast<std::size_t>(n), fill);
    memory m = b.HostMemory(md, values.data());
    return Arg{-1, md, m};
  }
  if (b.IsAct(v)) {
    if (ExpandRank(b.ActOf(v, node).dims, shape.size()) != shape)
      Unsupported(b, node, "run-time input '" + b.graph.value(v).name + "' must have the shape " + DimsString(shape));
    Arg arg = b.UsePlain(v, node);
    arg.md = md;
    return arg;
  }
  const Tensor& t = b.Const(v, node);
  if (t.elem_type != onnx::TensorProto::FLOAT) Unsupported(b, node, "integer tensors are not supported");
  if (t.dims.size() > shape.size()) Unsupported(b, node, "'" + b.graph.value(v).name + "' has a higher rank than expected");
  Dims td = ExpandRank(t.dims, shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (td[d] != 1 && td[d] != shape[d])
      Unsupported(b, node, "'" + b.graph.value(v).name + "' " + DimsString(t.dims) + " does not broadcast to " + DimsString(shape));
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {  // index in `shape` -> index in the broadcast tensor
    std::int64_t rest = k, src = 0, stride = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
      std::int64_t c = rest % shape[d];
      rest /= shape[d];
      if (td[d] != 1) src += c * stride;
      stride *= td[d];
    }
    values[static_cast<std::size_t>(k)] = t.data[static_cast<std::size_t>(src)];
  }
  memory m = b.HostMemory(md, values.data());
  return Arg{-1, md, m};
}

bool Read(const Builder& b, const Node& node, std::size_t output) {
  if (node.outputs.size() <= output || node.outputs[output] == kNoValue) return false;
  const Value& v = b.graph.value(node.outputs[output]);
  return v.is_graph_output || !v.consumers.empty();
}

}  // namespace

void EmitLayerNormalization(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  const Dims dims = b.ActOf(node.inputs[0], node).dims;
  const auto rank = static_cast<std::int64_t>(dims.size());
  std::int64_t axis = AttrInt(node, "axis", -1);
  if (axis < -rank || axis >= rank) Unsupported(b, node, "axis out of range");
  if (axis < 0) axis += rank;
  if (AttrInt(node, "stash_type", 1) != 1) Unsupported(b, node, "stash_type other than 1 (float)");
  const float epsilon = AttrFloat(node, "epsilon", 1e-5f);
  const Dims normalized(dims.begin() + axis, dims.end());
  const std::int64_t cols = Product(normalized), rows = Product(dims) / std::max<std::int64_t>(cols, 1);
  Arg scale = ParamArg(b, node, 1, normalized, 1.f), shift = ParamArg(b, node, 2, normalized, 0.f);
  const bool want_mean = Read(b, node, 1), want_inv = Read(b, node, 2);
  Arg src = b.UsePlain(node.inputs[0], node);
  src.md = PlainDesc({rows, cols});
  Act mean, inv;
  Act dst = EmitLayerNormKernel(b, node.name, src, dims, cols, epsilon, scale, shift, want_mean ? &mean : nullptr,
                                want_inv ? &inv : nullptr);
  b.SetAct(node.outputs[0], dst);
  Dims stat(dims.begin(), dims.begin() + axis);
  stat.resize(dims.size(), 1);
  if (want_mean) b.SetAct(node.outputs[1], Act{mean.slot, PlainDesc(stat), stat});
  if (want_inv) b.SetAct(node.outputs[2], Act{inv.slot, PlainDesc(stat), stat});
}

void EmitInstanceNormalization(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  const Dims dims = b.ActOf(node.inputs[0], node).dims;
  if (dims.size() < 3) Unsupported(b, node, "X must have spatial dims (rank 3 or more)");
  const std::int64_t n = dims[0], c = dims[1], spatial = Product(Dims(dims.begin() + 2, dims.end()));
  // scale and B per channel, tiled over the batch: the view's channel n*C + c.
  auto tiled = [&](std::size_t i) {
    if (b.IsAct(node.inputs[i]) && n != 1) Unsupported(b, node, "run-time scale or B with a batch of more than 1");
    Arg one = ParamArg(b, node, i, {c}, 0.f);
    if (n == 1) return one;
    std::vector<float> values(static_cast<std::size_t>(n * c));
    const auto* p = static_cast<const float*>(one.fixed.get_data_handle());
    for (std::int64_t k = 0; k < n * c; ++k) values[static_cast<std::size_t>(k)] = p[k % c];
    memory m = b.HostMemory(PlainDesc({n * c}), values.data());
    return Arg{-1, m.get_desc(), m};
  };
  if (node.inputs.size() < 3 || node.inputs[1] == kNoValue || node.inputs[2] == kNoValue)
    Unsupported(b, node, "scale and B are required");
  Arg scale = tiled(1), shift = tiled(2);
  Arg src = b.UsePlain(node.inputs[0], node);
  // 4-D, not [1, N*C, D]: oneDNN 2.6 has no optimised batch normalization
  // for a 3-D tensor and runs its reference loop (bnorm_ref:any), ~50x slower.
  src.md = PlainDesc({1, n * c, spatial, 1});
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, src.md,
                                               AttrFloat(node, "epsilon", 1e-5f),
                                               dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
  auto pd = MakePd<dnnl::batch_normalization_forward::primitive_desc>(b, node, desc, b.Attr());
  Act dst = b.NewAct(dims, pd.dst_desc());
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}};
  // Statistics computed by an inference primitive are internal; should this
  // oneDNN expose them as outputs, give them buffers of their own.
  for (auto [arg, md] : {std::pair{DNNL_ARG_MEAN, pd.mean_desc()}, std::pair{DNNL_ARG_VARIANCE, pd.variance_desc()}})
    if (!md.is_zero()) args.emplace_back(arg, Arg{b.NewAct(DimsOf(md), md).slot, md, {}});
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, pd.dst_desc(), {}});
  b.Emit(pd, "batch_norm", node.name, std::move(args), pd.dst_desc());
  dst.md = PlainDesc(dims);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
