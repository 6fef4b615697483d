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
//     -> our InstanceNorm kernel (the same sums in double) on the view
//        [N*C, D1*..*Dk]. oneDNN's batch_normalization_forward, computing the
//        statistics, sums in float: on a nearly constant instance its mean is
//        off by a good part of the spread that the division then magnifies.
// Both compute the biased variance, as ONNX does.
#include "backend/lower/ops/normalization.h"

#include "backend/kernels/layer_norm.h"
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
  if (node.inputs.size() < 3 || node.inputs[1] == kNoValue || node.inputs[2] == kNoValue)
    Unsupported(b, node, "scale and B are required");
  const std::int64_t n = dims[0], c = dims[1], spatial = Product(Dims(dims.begin() + 2, dims.end()));
  Arg scale = ParamArg(b, node, 1, {c}, 1.f), shift = ParamArg(b, node, 2, {c}, 0.f);
  Arg src = b.UsePlain(node.inputs[0], node);
  const Act dst = b.NewAct(dims, PlainDesc(dims));
  std::vector<std::pair<int, Arg>> args = {{0, src}, {1, scale}, {2, shift}, {3, Arg{dst.slot, dst.md, {}}}};
  const float epsilon = AttrFloat(node, "epsilon", 1e-5f);
  CustomKernel kernel = [n, c, spatial, epsilon](const std::vector<void*>& data) {
    InstanceNorm(static_cast<const float*>(data[0]), static_cast<const float*>(data[1]),
                 static_cast<const float*>(data[2]), static_cast<float*>(data[3]), n, c, spatial, epsilon);
  };
  b.EmitCustom("instance_norm", node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:instance_norm");
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
