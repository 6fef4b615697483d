// Elementwise activations: ONNX unary ops as oneDNN eltwise algorithms
// (EltwiseOf), run as post-ops of a chain or as eltwise_forward steps of their
// own; PRelu as prelu_forward.
#include "backend/lower/ops/eltwise.h"

#include <cfloat>
#include <cmath>

#include "backend/lower/core/chain.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/ops/broadcast_binary.h"
#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"

namespace onnxfuse::backend {

namespace {

using dnnl::algorithm;

float ConstScalar(Builder& b, const Node& node, std::size_t i, float fallback) {
  if (node.inputs.size() <= i || node.inputs[i] == kNoValue) return fallback;
  if (!b.IsConst(node.inputs[i])) return NAN;
  const Tensor& t = b.Const(node.inputs[i], node);
  return t.NumElements() == 1 ? static_cast<float>(eval::ElementAt(t, 0)) : NAN;
}

PostOp Eltwise(algorithm alg, float alpha = 0, float beta = 0) {
  PostOp po;
  po.alg = alg, po.alpha = alpha, po.beta = beta;
  return po;
}

}  // namespace

std::vector<PostOp> EltwiseOf(Builder& b, const Node& node) {
  const std::string& op = node.op_type;
  if (!node.domain.empty() || node.outputs.size() != 1) return {};
  // max(x, 0): NaN becomes 0 (oneDNN's JIT kernels; ONNX Runtime keeps NaN).
  // Keeping NaN would need eltwise_elu with alpha 0, whose exp costs 2x on a
  // 1x1 convolution of few channels (docs/correctness.md, NaN).
  if (op == "Relu") return {Eltwise(algorithm::eltwise_relu)};
  if (op == "LeakyRelu") return {Eltwise(algorithm::eltwise_relu, AttrFloat(node, "alpha", 0.01f))};
  if (op == "Sigmoid") return {Eltwise(algorithm::eltwise_logistic)};
  if (op == "Tanh") return {Eltwise(algorithm::eltwise_tanh)};
  if (op == "Elu") return {Eltwise(algorithm::eltwise_elu, AttrFloat(node, "alpha", 1.f))};
  if (op == "Exp") return {Eltwise(algorithm::eltwise_exp)};
  if (op == "Abs") return {Eltwise(algorithm::eltwise_abs)};
  if (op == "Sqrt") return {Eltwise(algorithm::eltwise_sqrt)};
  if (op == "Neg") return {Eltwise(algorithm::eltwise_linear, -1.f, 0.f)};
  if (op == "Reciprocal") return {Eltwise(algorithm::eltwise_pow, 1.f, -1.f)};  // alpha * x^beta
  if (op == "Softplus") return {Eltwise(algorithm::eltwise_soft_relu)};
  if (op == "Pow") {  // x^p with a constant scalar exponent
    float p = ConstScalar(b, node, 1, NAN);
    if (std::isnan(p)) return {};
    return {Eltwise(algorithm::eltwise_pow, 1.f, p)};
  }
  if (op == "HardSwish") return {Eltwise(algorithm::eltwise_hardswish, 1.f / 6, 0.5f)};
  if (op == "HardSigmoid")  // max(0, min(1, alpha*x + beta)): no hardsigmoid in oneDNN 2.6
    return {Eltwise(algorithm::eltwise_linear, AttrFloat(node, "alpha", 0.2f), AttrFloat(node, "beta", 0.5f)),
            Eltwise(algorithm::eltwise_clip, 0.f, 1.f)};
  if (op == "Clip") {
    float lo, hi;
    if (b.graph.opset() < 11) {
      lo = AttrFloat(node, "min", -FLT_MAX), hi = AttrFloat(node, "max", FLT_MAX);
    } else {
      lo = ConstScalar(b, node, 1, -FLT_MAX), hi = ConstScalar(b, node, 2, FLT_MAX);
    }
    if (std::isnan(lo) || std::isnan(hi)) return {};  // bounds computed at run time
    return {Eltwise(algorithm::eltwise_clip, lo, hi)};
  }
  return {};
}

void EmitEltwise(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  Arg src = OpInput(b, node, 0);
  Dims dims = b.ActOf(node.inputs[0], node).dims;
  // Fused, in place over x when nothing reads x later.
  bool in_place = b.fuse && b.DeadNow(src.slot, &node);
  const int input_slot = src.slot;
  for (const PostOp& po : EltwiseOf(b, node)) {
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, po.alg, src.md, po.alpha, po.beta);
    auto pd = MakePd<dnnl::eltwise_forward::primitive_desc>(b, node, desc, b.Attr());
    // oneDNN 2.6 runs its reference kernel over a blocked layout whose channels
    // are padded (a squeeze-and-excitation vector of 4 channels in 8-blocks,
    // between a convolution and a quantization): the plain layout has a jit one.
    if (IsSlowImpl("eltwise", pd.impl_info_str()) && src.slot == input_slot && src.md != PlainDesc(dims)) {
      const Arg plain = b.UsePlain(node.inputs[0], node);
      dnnl::eltwise_forward::desc plain_desc(dnnl::prop_kind::forward_inference, po.alg, plain.md, po.alpha, po.beta);
      auto plain_pd = MakePd<dnnl::eltwise_forward::primitive_desc>(b, node, plain_desc, b.Attr());
      if (!IsSlowImpl("eltwise", plain_pd.impl_info_str())) {
        src = plain, pd = plain_pd;
        in_place = false;  // the plain copy is shared by every reader wanting it
      }
    }
    Act dst = in_place && pd.dst_desc() == src.md ? Act{src.slot, src.md, dims} : b.NewAct(dims, pd.dst_desc());
    in_place = b.fuse;  // the next step (HardSigmoid's clip) works on this step's own result
    b.Emit(pd, "eltwise", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
    src = Arg{dst.slot, dst.md, {}};
  }
  b.SetAct(node.outputs[0], Act{src.slot, src.md, dims});
}

// PRelu: y = x < 0 ? slope * x : x, the slope unidirectionally broadcast to x
// (ONNX) -> prelu_forward with the slope as weights of x's rank, each dim 1 or x's.
void EmitPrelu(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  Dims dims = b.ActOf(node.inputs[0], node).dims, sd = b.DimsOfValue(node.inputs.at(1), node);
  if (sd.size() > dims.size()) Unsupported(b, node, "slope has a higher rank than X");
  sd = ExpandRank(sd, dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (sd[d] != 1 && sd[d] != dims[d]) Unsupported(b, node, "slope " + DimsString(sd) + " does not broadcast to X " + DimsString(dims));
  const dnnl::memory::desc slope_md = PlainDesc(sd);
  if (b.IsConst(node.inputs[1]) && b.Const(node.inputs[1], node).elem_type != onnx::TensorProto::FLOAT)
    Unsupported(b, node, "integer tensors are not supported");
  Arg src = OpInput(b, node, 0);
  using PreluPd = dnnl::prelu_forward::primitive_desc;
  PreluPd pd;
  try {
    pd = PreluPd(dnnl::prelu_forward::desc(dnnl::prop_kind::forward_inference, src.md, slope_md), b.Attr(), b.engine);
  } catch (const dnnl::error&) {  // a layout the kernel does not take: plain
    src = b.UsePlain(node.inputs[0], node);
    pd = MakePd<PreluPd>(b, node, dnnl::prelu_forward::desc(dnnl::prop_kind::forward_inference, src.md, slope_md),
                         b.Attr());
  }
  // oneDNN 2.6 serves some layouts and slope shapes (a channels-last x with
  // a plain slope, a slope of one element on a 4-D x) only with its reference
  // kernel: those run on our BroadcastBinary. The slope is read only once
  // that is decided.
  if (IsSlowImpl("prelu", pd.impl_info_str()) && StorageOf(b, node.inputs[0], node) == onnx::TensorProto::FLOAT)
    return EmitOwnBinary(b, node, BinaryAlg::kPRelu, "prelu", dims);
  Arg slope;
  if (b.IsConst(node.inputs[1])) {
    slope.md = slope_md;
    slope.fixed = b.HostMemory(slope.md, b.Const(node.inputs[1], node).data.data());
  } else {
    slope = b.UsePlain(node.inputs[1], node);
    slope.md = slope_md;
  }
  Act dst = b.NewAct(dims, pd.dst_desc());
  b.Emit(pd, "prelu", node.name,
         {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, slope}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
