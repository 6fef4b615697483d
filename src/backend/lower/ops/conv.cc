// Conv chains: convolution_forward primitives with the chain's folded
// BatchNormalization and post-ops (the weights and bias helpers they share
// with Gemm and MatMul: operands.h; the geometry: conv_geometry.h).
#include "backend/lower/ops/conv.h"

#include "ir/attributes.h"
#include "eval/host_eval.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/fused/channel_scale.h"
#include "backend/lower/ops/concat.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/impl_choice.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/own_kernels/own_kernels.h"
#include "backend/lower/core/unsupported.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

namespace {

// Winograd's minimal filtering F(2x2, 3x3) (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", CVPR 2016) does a 3x3 convolution's work in
// 16 instead of 36 multiplications per 2x2 outputs; oneDNN 2.6 has it for
// AVX-512 (jit_fp32_wino_2x3) but never picks it by itself
// (convolution_auto keeps the direct kernel). It pays between wide layers:
// ResNet-18 at 1 thread 18.0 -> 13.3 ms, ResNet-50 42.3 -> 37.3 ms, with
// outputs within 2e-5 relative of the direct ones. Its channel-blocked layout
// suits readers that are convolutions (which take it), poolings or residual Adds; a
// Concat of it and channels-last branches (GoogLeNet, DenseNet, SqueezeNet)
// would make everything plain first and lose more than it gains. So: 3x3,
// stride 1, no dilation, group 1, at least 64 channels in and out, read only
// by Convs, Adds and poolings.
bool WinogradWorthIt(const Builder& b, const Chain& chain, const Dims& x, const Dims& w, const ConvGeometry& g,
                     std::int64_t group) {
  if (!b.fuse || group != 1 || x.size() != 4 || w[2] != 3 || w[3] != 3 || x[1] < 64 || w[0] < 64) return false;
  for (std::size_t i = 0; i < 2; ++i)
    if (g.strides[i] != 1 || g.dil[i] != 0) return false;
  const Value& out = b.graph.value(chain.out);
  if (out.is_graph_output || out.consumers.empty()) return false;
  for (NodeId c : out.consumers) {
    const Node& n = b.graph.node(c);
    if (!n.domain.empty() || !(n.op_type == "Conv" || n.op_type == "Add" || IsPooling(n.op_type))) return false;
  }
  return true;
}

// Conv whose weights W or bias B are known only at run time (graph inputs,
// as most ONNX node tests pass them, or computed values): the primitive
// chooses the weights' layout as for constants, and a reorder step per
// inference brings W's plain oihw bytes (goihw for groups: the same bytes)
// into it; B is read plain. No own kernels (they pack constant weights),
// and no folded BatchNormalization (FoldBatchNorm leaves such anchors alone).
void EmitConvRuntimeWeights(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (!chain.affine.scale.empty())
    throw Error(ErrorKind::kInternal,
                "internal error: " + NodeLabel(node) + ": a BatchNormalization folded into run-time weights");
  const ValueId input = node.inputs[0];
  if (!b.IsAct(input)) b.ConstAsAct(input, node);
  const Dims x = b.ActOf(input, node).dims, w = b.DimsOfValue(node.inputs.at(1), node);
  const ConvGeometry geometry = ConvGeometryOf(b, node, x, w);
  const Dims &out = geometry.out, &strides = geometry.strides, &dil = geometry.dil, &pl = geometry.pl, &pr = geometry.pr;
  const std::int64_t group = AttrInt(node, "group", 1), out_channels = w[0];
  Dims wdims = w;
  if (group > 1) {  // goihw: the same bytes as oihw
    wdims = {group, out_channels / group};
    wdims.insert(wdims.end(), w.begin() + 1, w.end());
  }
  const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != kNoValue;
  if (has_bias && b.DimsOfValue(node.inputs[2], node) != Dims{out_channels})
    Unsupported(b, node, "B must have one value per output channel");
  using ConvPd = dnnl::convolution_forward::primitive_desc;
  auto conv_desc = [&](const memory::desc& src_md, const memory::desc& dst_md) {
    const memory::desc bias_md = has_bias ? PlainDesc({out_channels}) : memory::desc();
    return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           src_md, AnyDesc(wdims), bias_md, dst_md, strides, dil, pl, pr);
  };
  std::size_t count = 0;  // post-ops the conv takes; the rest run after it (chain.h, "Splitting")
  auto make = [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
    if (!dst.is_zero()) return ConvPd(conv_desc(WithLayoutOf(dst, x), dst), attr, b.engine);  // channels-last
    return ConvPd(conv_desc(b.fuse ? AnyDesc(x) : PlainDesc(x), b.fuse ? AnyDesc(out) : PlainDesc(out)), attr,
                  b.engine);
  };
  ConvPd pd = MakeChainPd<ConvPd>(b, chain, out, "conv", count, make);
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  const std::string label = ChainLabel(b, chain);
  const Arg src = b.Use(input, pd.src_desc(), node);
  Arg weights;
  if (IsRuntimeInput(b, node, 1)) {
    weights = RuntimeOperand(b, node.inputs[1], node, PlainDesc(wdims), pd.weights_desc(), label + " (weights)");
  } else {
    const Tensor& t = b.Const(node.inputs[1], node);
    memory m = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                [&] { return b.HostView(PlainDesc(wdims), t.data.data()); });
    weights = Arg{-1, m.get_desc(), m};
  }
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, weights);
  std::vector<int> read = {src.slot, weights.slot};
  if (has_bias) {
    const Arg bias =
        RuntimeOperand(b, node.inputs[2], node, PlainDesc({out_channels}), pd.bias_desc(), label + " (bias)");
    args.emplace_back(DNNL_ARG_BIAS, bias);
    read.push_back(bias.slot);
  }
  FinishChain(b, chain, pd, "conv", out, std::move(args), read, count);
}

// The chain on the first of our own kernels that takes it, from operands
// EmitConv and EmitConvOnOwnKernel each compute once.
bool OnOwnKernel(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                 const ConvGeometry& geometry) {
  return EmitPointwise(b, chain, input, w, bias, geometry) || EmitConvWinograd(b, chain, input, w, bias, geometry) ||
         EmitConvGemm(b, chain, input, w, bias, geometry);
}

}  // namespace

bool EmitConvOnOwnKernel(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (IsRuntimeInput(b, node, 1) || IsRuntimeInput(b, node, 2) || b.deferred_concats.count(node.inputs[0]))
    return false;
  const ValueId input = ScaledInput(b, node.inputs[0]);  // x of a deferred x * s: the weights take s
  ConvWeights w(b, chain);
  const ConvGeometry geometry = ConvGeometryOf(b, node, b.ActOf(input, node).dims, w.dims());
  std::vector<double> bias = BiasOf(b, node, 2, w.dims()[0]);
  eval::FoldIntoBias(bias, chain.affine);
  return OnOwnKernel(b, chain, input, w, bias, geometry);
}

void EmitConv(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (IsRuntimeInput(b, node, 1) || IsRuntimeInput(b, node, 2)) {
    if (b.deferred_concats.count(node.inputs[0])) EmitDeferredConcat(b, node.inputs[0]);
    return EmitConvRuntimeWeights(b, chain);
  }
  if (b.deferred_concats.count(node.inputs[0])) {
    if (EmitConvOverConcatParts(b, chain)) return;
    EmitDeferredConcat(b, node.inputs[0]);
  }
  const ValueId input = ScaledInput(b, node.inputs[0]);  // x of a deferred x * s: the weights take s
  Dims x = b.ActOf(input, node).dims;
  ConvWeights w(b, chain);
  const ConvGeometry geometry = ConvGeometryOf(b, node, x, w.dims());
  const Dims &out = geometry.out, &strides = geometry.strides, &dil = geometry.dil, &pl = geometry.pl, &pr = geometry.pr;
  const std::int64_t group = AttrInt(node, "group", 1), out_channels = w.dims()[0];
  std::vector<double> bias = BiasOf(b, node, 2, out_channels);
  eval::FoldIntoBias(bias, chain.affine);
  if (OnOwnKernel(b, chain, input, w, bias, geometry)) return;

  Dims wdims = w.dims();
  if (group > 1) {  // goihw: the same bytes as oihw
    wdims = {group, out_channels / group};
    wdims.insert(wdims.end(), w.dims().begin() + 1, w.dims().end());
  }
  using ConvPd = dnnl::convolution_forward::primitive_desc;
  auto conv_desc = [&](const memory::desc& src_md, const memory::desc& dst_md,
                       dnnl::algorithm alg = dnnl::algorithm::convolution_direct) {
    return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_md, AnyDesc(wdims),
                                           PlainDesc({out_channels}), dst_md, strides, dil, pl, pr);
  };
  const bool winograd = WinogradWorthIt(b, chain, x, w.dims(), geometry, group);
  // Fused: keep the layout the producer chose (e.g. NHWC) when a fast kernel
  // takes it, so that grouped convolutions do not bounce through their own
  // blocked layout with a reorder on each side; otherwise let the conv choose.
  const memory::desc& have = b.ActOf(input, node).md;
  memory::desc same = b.fuse && !IsPlainEquivalent(have) ? WithLayoutOf(have, out) : memory::desc();
  std::size_t count = 0;  // post-ops the conv takes; the rest run after it (chain.h, "Splitting")
  auto make = [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
    if (!dst.is_zero()) return ConvPd(conv_desc(WithLayoutOf(dst, x), dst), attr, b.engine);  // channels-last
    // A preferred descriptor, when oneDNN has a fast kernel for it; else an empty pd.
    auto fast = [&](const dnnl::convolution_forward::desc& desc) {
      try {
        ConvPd pd(desc, attr, b.engine);
        if (!IsSlowImpl("conv", pd.impl_info_str())) return pd;
      } catch (const dnnl::error&) {
      }
      return ConvPd();
    };
    if (winograd)  // in the layouts it chooses, with these post-ops if it takes them
      if (ConvPd wino = fast(conv_desc(AnyDesc(x), AnyDesc(out), dnnl::algorithm::convolution_winograd))) return wino;
    if (!same.is_zero())
      if (ConvPd kept = fast(conv_desc(have, same))) return kept;
    if (b.fuse && IsPlainEquivalent(have)) {
      // A planar source (the network's image) read as it is, when the
      // result is channels-last anyway (nChw16c of 16 channels):
      // MobileNetV3's first conv, 3 -> 16 at 224x224, on jit:avx512_core
      // takes 0.062 ms against 0.074 ms for brgconv plus 0.017 ms to make
      // the image channels-last first.
      ConvPd direct = fast(conv_desc(have, AnyDesc(out)));
      if (direct && SameBytes(direct.dst_desc(), ChannelsLastDesc(out))) return direct;
    }
    return ConvPd(conv_desc(b.fuse ? AnyDesc(x) : PlainDesc(x), b.fuse ? AnyDesc(out) : PlainDesc(out)), attr,
                  b.engine);
  };
  ConvPd pd = MakeChainPd<ConvPd>(b, chain, out, "conv", count, make);
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  if (b.fuse && group > 1 && group == x[1]) {
    // Depthwise: oneDNN 2.6 ranks brdgmm_dw first on AVX-512, but jit_dw
    // with the same layouts is faster for most shapes (on a Zen 4 at 1
    // thread, each pair timed in 7 interleaved rounds: 13 of mobilenet_v2's
    // 17 depthwise convolutions by over 5%, the 17 together 0.83-1.30 ms
    // against 1.09-1.43; 1 to 3 of efficientnet_b0's by 10-35% the other way).
    pd = ConvPd(ChooseImpl(b, pd, "conv", "conv:" + node.name, "jit_dw").get());
  }

  Arg src = b.Use(input, pd.src_desc(), node);
  memory weights = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                    [&] { return b.HostView(PlainDesc(wdims), w.data().data()); });
  args.emplace_back(DNNL_ARG_SRC, src);
  if (input != node.inputs[0])
    args.emplace_back(DNNL_ARG_WEIGHTS, EmitScaledWeights(b, node.inputs[0], weights, ChainLabel(b, chain)));
  else
    args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  memory bias_mem = BiasMemory(b, chain.anchor, bias);
  args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
  FinishChain(b, chain, pd, "conv", out, std::move(args), {src.slot}, count);
}

}  // namespace onnxfuse::backend
