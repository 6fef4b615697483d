// BatchNormalization: its inference formula as a per-channel affine map
// (folded into a Conv, ConvTranspose or Gemm chain, or into Concat+BN), and as
// a batch_normalization_forward anchor of its own, whose scale, shift, mean
// and variance are constants or values known only at run time (oneDNN reads
// them from memories at each execution: nothing to precompute).
#include "backend/lower/ops/batch_norm.h"

#include <cmath>

#include "backend/lower/core/chain.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"

namespace onnxfuse::backend {

using dnnl::memory;

std::optional<eval::ChannelAffine> BatchNormAffine(Builder& b, const Node& bn) {
  if (AttrInt(bn, "training_mode", 0) != 0 || bn.inputs.size() < 5) return std::nullopt;
  for (std::size_t i = 1; i < 5; ++i)
    if (!b.IsConst(bn.inputs[i])) return std::nullopt;
  const Tensor &gamma = b.Const(bn.inputs[1], bn), &beta = b.Const(bn.inputs[2], bn);
  const Tensor &mean = b.Const(bn.inputs[3], bn), &var = b.Const(bn.inputs[4], bn);
  const std::int64_t channels = gamma.NumElements();
  if (beta.NumElements() != channels || mean.NumElements() != channels || var.NumElements() != channels)
    return std::nullopt;
  return eval::BatchNormAffine(eval::HostValues(gamma), eval::HostValues(beta), eval::HostValues(mean),
                               eval::HostValues(var), AttrFloat(bn, "epsilon", 1e-5f));
}

void EmitBatchNorm(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (AttrInt(node, "training_mode", 0) != 0) Unsupported(b, node, "training_mode=1 is not supported");
  Arg src = OpInput(b, node, 0);
  Dims dims = b.ActOf(node.inputs[0], node).dims;
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, src.md,
                                               AttrFloat(node, "epsilon", 1e-5f), flags);
  auto pd = MakePd<dnnl::batch_normalization_forward::primitive_desc>(b, node, desc, b.Attr());
  if (IsSlowImpl("batch_norm", pd.impl_info_str()) && dims.size() >= 2 && dims.size() <= 5) {
    // oneDNN 2.6 has only its reference batch normalization ("bnorm_ref:any")
    // for 2-D and 3-D data and for channels-last 5-D data; its jit one takes
    // the same bytes plain, 2-D and 3-D as 4-D: [N, C] as [N, C, 1, 1] and
    // [N, C, W] as [N, C, 1, W].
    src = b.UsePlain(node.inputs[0], node);
    src.md = dims.size() >= 4 ? PlainDesc(dims) : PlainDesc({dims[0], dims[1], 1, dims.size() == 3 ? dims[2] : 1});
    const dnnl::batch_normalization_forward::desc desc4(dnnl::prop_kind::forward_inference, src.md,
                                                        AttrFloat(node, "epsilon", 1e-5f), flags);
    pd = MakePd<dnnl::batch_normalization_forward::primitive_desc>(b, node, desc4, b.Attr());
  }
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}};
  const int keys[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (std::size_t i = 0; i < 4; ++i) {
    const ValueId v = node.inputs.at(i + 1);
    if (dims.size() < 2 || Product(b.DimsOfValue(v, node)) != dims[1])
      Unsupported(b, node, "parameters must have one value per channel");
    const memory::desc md = PlainDesc({dims[1]});
    if (b.IsConst(v)) {
      const Tensor& t = b.Const(v, node);
      if (t.elem_type != onnx::TensorProto::FLOAT) Unsupported(b, node, "parameters must be float32");
      memory m = b.HostMemory(md, t.data.data());
      args.emplace_back(keys[i], Arg{-1, m.get_desc(), m});
    } else {  // a graph input or computed value: read in place, as [C]
      Arg param = b.UsePlain(v, node);
      param.md = md;
      args.emplace_back(keys[i], param);
    }
  }
  FinishChain(b, chain, pd, "batch_norm", dims, std::move(args), {src.slot}, kAllPostOps, DNNL_ARG_SRC);
}

}  // namespace onnxfuse::backend
