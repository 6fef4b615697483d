// The LayerNormalization decomposition exporters write for an op ONNX opset 13
// lacks, run in fused mode as one primitive once the pattern library found it
// (patterns/layer_norm.onnxtxt):
//   m = ReduceMean(x, [-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), [-1]);
//   y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, gamma)] [; y = Add(y, beta)]
//   -> layer_normalization_forward (use_scale | use_shift)
// Its nodes may belong to several fusion groups (they are absorbed wherever
// they are). The
// primitive itself (EmitLayerNormPrimitive) serves the LayerNormalization op
// too (backend/lower/ops/normalization.cc).
#include "backend/lower/fused/layer_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"

namespace onnxfuse::backend {

bool LastAxisMean(const Node& n, std::size_t rank) {
  auto axes = AttrInts(n, "axes");
  return n.op_type == "ReduceMean" && AttrInt(n, "keepdims", 1) == 1 && axes.size() == 1 &&
         (axes[0] == -1 || axes[0] == static_cast<std::int64_t>(rank) - 1);
}

bool TakeLayerNormAffine(Builder& b, const Node& n, LayerNormParts& parts) {
  const ValueId p = OtherInput(n, parts.out);
  if (p == kNoValue || !b.IsConst(p)) return false;
  const Tensor& t = b.Const(p, n);
  const auto channels = static_cast<std::int64_t>(parts.scale.size());
  if (t.elem_type != onnx::TensorProto::FLOAT || t.NumElements() != channels || t.dims.size() != 1) return false;
  (n.op_type == "Mul" ? parts.scale : parts.shift) = t.data;
  parts.nodes.push_back(&n);
  parts.out = n.outputs[0];
  return true;
}

void EmitLayerNorm(Builder& b, const LayerNormParts& parts) {
  const Node& r1 = *parts.nodes.front();
  const auto channels = static_cast<std::int64_t>(parts.scale.size());
  Arg src = b.UsePlain(parts.x, r1);
  dnnl::memory scale_mem = b.HostMemory(PlainDesc({channels}), parts.scale.data());
  dnnl::memory shift_mem = b.HostMemory(PlainDesc({channels}), parts.shift.data());
  Act dst = EmitLayerNormPrimitive(b, r1, r1.name + "+LayerNormalization", src, b.ActOf(parts.x, r1).dims,
                                   static_cast<float>(parts.epsilon), Arg{-1, scale_mem.get_desc(), scale_mem},
                                   Arg{-1, shift_mem.get_desc(), shift_mem});
  Absorb(b, parts.nodes);
  b.SetAct(parts.out, dst);
}

Act EmitLayerNormPrimitive(Builder& b, const Node& node, const std::string& label, const Arg& src, const Dims& dims,
                           float epsilon, const Arg& scale, const Arg& shift, Act* mean, Act* variance) {
  const bool stats = mean || variance;
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc desc(
      stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, src.md, epsilon, flags);
  dnnl::layer_normalization_forward::primitive_desc pd;
  try {
    pd = dnnl::layer_normalization_forward::primitive_desc(desc, b.Attr(), b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no layer normalization: ") + e.what());
  }
  Act dst = b.NewAct(dims, pd.dst_desc());
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}};
  if (stats) {  // forward_training writes both statistics
    Dims rows = DimsOf(pd.mean_desc());
    Act m = b.NewAct(rows, pd.mean_desc()), v = b.NewAct(rows, pd.variance_desc());
    args.emplace_back(DNNL_ARG_MEAN, Arg{m.slot, m.md, {}});
    args.emplace_back(DNNL_ARG_VARIANCE, Arg{v.slot, v.md, {}});
    if (mean) *mean = m;
    if (variance) *variance = v;
  }
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, pd.dst_desc(), {}});
  b.Emit(pd, "layer_norm", label, std::move(args), pd.dst_desc());
  dst.md = PlainDesc(dims);  // the same bytes as the 2-D view the primitive wrote
  return dst;
}

}  // namespace onnxfuse::backend
