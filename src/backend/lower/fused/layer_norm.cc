// The LayerNormalization decomposition exporters write for an op ONNX opset 13
// lacks, run in fused mode as one primitive once the pattern library found it
// (patterns/layer_norm.onnxtxt):
//   m = ReduceMean(x, [-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), [-1]);
//   y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, gamma)] [; y = Add(y, beta)]
//   -> one pass of our LayerNorm kernel (backend/kernels/layer_norm.h)
// Its nodes may belong to several fusion groups (they are absorbed wherever
// they are). The kernel's step (EmitLayerNormKernel) serves the
// LayerNormalization op too (backend/lower/ops/normalization.cc).
#include "backend/lower/fused/layer_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "backend/kernels/layer_norm.h"
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
  Act dst = EmitLayerNormKernel(b, r1.name + "+LayerNormalization", src, b.ActOf(parts.x, r1).dims, channels,
                                static_cast<float>(parts.epsilon), Arg{-1, scale_mem.get_desc(), scale_mem},
                                Arg{-1, shift_mem.get_desc(), shift_mem});
  Absorb(b, parts.nodes);
  b.SetAct(parts.out, dst);
}

Act EmitLayerNormKernel(Builder& b, const std::string& label, const Arg& src, const Dims& dims, std::int64_t n,
                        float epsilon, const Arg& scale, const Arg& shift, Act* mean, Act* inv_std_dev) {
  const std::int64_t rows = n == 0 ? 0 : Product(dims) / n;
  std::vector<std::pair<int, Arg>> args = {{0, src}, {1, scale}, {2, shift}};
  const Act dst = b.NewAct(dims, PlainDesc(dims));
  args.emplace_back(3, Arg{dst.slot, dst.md, {}});
  // A statistic wanted: a new [rows] slot, the kernel's next argument (its index); -1 when not.
  const auto statistic = [&](Act* out) {
    if (!out) return -1;
    *out = b.NewAct({rows}, PlainDesc({rows}));
    args.emplace_back(static_cast<int>(args.size()), Arg{out->slot, out->md, {}});
    return static_cast<int>(args.size()) - 1;
  };
  const int mean_arg = statistic(mean), inv_arg = statistic(inv_std_dev);
  CustomKernel kernel = [rows, n, epsilon, mean_arg, inv_arg](const std::vector<void*>& data) {
    const auto out = [&](int i) { return i < 0 ? nullptr : static_cast<float*>(data[static_cast<std::size_t>(i)]); };
    LayerNorm(static_cast<const float*>(data[0]), static_cast<const float*>(data[1]), static_cast<const float*>(data[2]),
              static_cast<float*>(data[3]), out(mean_arg), out(inv_arg), rows, n, epsilon);
  };
  b.EmitCustom("layer_norm", label, std::move(args), std::move(kernel), dst.md, "onnxfuse:layer_norm");
  return dst;
}

}  // namespace onnxfuse::backend
