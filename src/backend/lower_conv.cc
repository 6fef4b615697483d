// Conv, Gemm and MatMul chains: convolution_forward and matmul primitives with
// the chain's folded BatchNormalization and post-ops.
#include <cmath>
#include <functional>

#include "attrs.h"
#include "host_eval.h"
#include "lower.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

void FoldAffine(const Chain& chain, std::vector<float>& weights, std::vector<double>& bias, std::int64_t out_channels) {
  if (chain.scale.empty()) return;
  auto per_channel = static_cast<std::int64_t>(weights.size()) / out_channels;
  for (std::int64_t o = 0; o < out_channels; ++o) {
    double k = chain.scale[static_cast<std::size_t>(o)];
    for (std::int64_t i = 0; i < per_channel; ++i) {
      auto& w = weights[static_cast<std::size_t>(o * per_channel + i)];
      w = static_cast<float>(static_cast<double>(w) * k);
    }
    auto& c = bias[static_cast<std::size_t>(o)];
    c = c * k + chain.shift[static_cast<std::size_t>(o)];
  }
}

std::vector<double> BiasOf(Builder& b, const Node& node, std::size_t input, std::int64_t n, double scale) {
  std::vector<double> bias(static_cast<std::size_t>(n), 0.0);
  if (node.inputs.size() <= input || node.inputs[input] == kNoValue) return bias;
  const Tensor& t = b.Const(node.inputs[input], node);
  if (t.NumElements() != 1 && t.NumElements() != n) Unsupported(b, node, "bias must have one value per output");
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = scale * ElementAt(t, t.NumElements() == 1 ? 0 : static_cast<std::int64_t>(i));
  return bias;
}

memory BiasMemory(Builder& b, NodeId anchor, const std::vector<double>& bias, bool as_row) {
  const auto n = static_cast<std::int64_t>(bias.size());
  const memory::desc md = as_row ? PlainDesc({1, n}) : PlainDesc({n});
  std::vector<float> f(bias.begin(), bias.end());
  return b.PackedConstant(anchor, "bias", md, [&] { return b.HostView(md, f.data()); });
}

ConvGeometry ConvGeometryOf(const Builder& b, const Node& node, const Dims& x, const Dims& w) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) Unsupported(b, node, "only 1-D to 3-D convolutions");
  const std::size_t spatial = w.size() - 2;
  const std::int64_t group = AttrInt(node, "group", 1), out_channels = w[0];
  if (x[1] != w[1] * group || out_channels % group != 0)
    throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": channels do not match");
  ConvGeometry g;
  Dims kernel(w.begin() + 2, w.end());
  g.strides = AttrInts(node, "strides", Dims(spatial, 1));
  Dims dilations = AttrInts(node, "dilations", Dims(spatial, 1));
  Dims pads = AttrInts(node, "pads", Dims(2 * spatial, 0));
  std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  g.pl.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  g.pr.assign(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());
  g.out = {x[0], out_channels};
  for (std::size_t i = 0; i < spatial; ++i) {
    std::int64_t in = x[i + 2], extent = (kernel[i] - 1) * dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      std::int64_t o = (in + g.strides[i] - 1) / g.strides[i];
      std::int64_t total = std::max<std::int64_t>(0, (o - 1) * g.strides[i] + extent - in);
      g.pl[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pr[i] = total - g.pl[i];
    } else if (auto_pad == "VALID") {
      g.pl[i] = g.pr[i] = 0;
    }
    g.out.push_back((in + g.pl[i] + g.pr[i] - extent) / g.strides[i] + 1);
    g.dil.push_back(dilations[i] - 1);
  }
  return g;
}

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

using MatMulPd = dnnl::matmul::primitive_desc;

// The matmul `make(weights_md)` makes for constant 2-D weights [K, N],
// letting oneDNN choose their layout. Where it has no brgemm kernel (AVX2)
// its gemm keeps `any` weights row-major [K, N], and its sgemm reads them
// faster column-major ([N, K] row-major, as ONNX Gemm's transB = 1 stores
// them): on one core of an AVX2 Zen 3, ViT-B/16's [197, 768] x [768, 3072]
// takes 11-14 ms against 39-53 ms, [197, 768] x [768, 768] 3.3 against 3.7.
MatMulPd WithGemmWeights(const Dims& weights, const std::function<MatMulPd(const memory::desc&)>& make) {
  MatMulPd pd = make(AnyDesc(weights));
  if (!pd || weights.size() != 2 || !(pd.weights_desc() == PlainDesc(weights))) return pd;
  try {
    MatMulPd columns = make(memory::desc(weights, DataType::f32, Dims{1, weights[0]}));
    if (!IsSlowImpl("matmul", columns.impl_info_str())) return columns;
  } catch (const dnnl::error&) {
  }
  return pd;
}

}  // namespace

void EmitConv(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (b.deferred_concats.count(node.inputs[0])) {
    if (EmitConvOverConcatParts(b, chain)) return;
    EmitDeferredConcat(b, node.inputs[0]);
  }
  const ValueId input = ScaledInput(b, node.inputs[0]);  // x of a deferred x * s: the weights take s
  Dims x = b.ActOf(input, node).dims;
  Tensor w = b.Const(node.inputs.at(1), node);
  const ConvGeometry geometry = ConvGeometryOf(b, node, x, w.dims);
  const Dims &out = geometry.out, &strides = geometry.strides, &dil = geometry.dil, &pl = geometry.pl, &pr = geometry.pr;
  const std::int64_t group = AttrInt(node, "group", 1), out_channels = w.dims[0];
  std::vector<double> bias = BiasOf(b, node, 2, out_channels);
  FoldAffine(chain, w.data, bias, out_channels);
  if (EmitPointwise(b, chain, input, w, bias, geometry) || EmitConvGemm(b, chain, input, w, bias, geometry)) return;

  Dims wdims = w.dims;
  if (group > 1) {  // goihw: the same bytes as oihw
    wdims = {group, out_channels / group};
    wdims.insert(wdims.end(), w.dims.begin() + 1, w.dims.end());
  }
  using ConvPd = dnnl::convolution_forward::primitive_desc;
  auto conv_desc = [&](const memory::desc& src_md, const memory::desc& dst_md,
                       dnnl::algorithm alg = dnnl::algorithm::convolution_direct) {
    return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_md, AnyDesc(wdims),
                                           PlainDesc({out_channels}), dst_md, strides, dil, pl, pr);
  };
  const bool winograd = WinogradWorthIt(b, chain, x, w.dims, geometry, group);
  // Fused: keep the layout the producer chose (e.g. NHWC) when a fast kernel
  // takes it, so that grouped convolutions do not bounce through their own
  // blocked layout with a reorder on each side; otherwise let the conv choose.
  const memory::desc& have = b.ActOf(input, node).md;
  memory::desc same = b.fuse && !IsPlainEquivalent(have) ? WithLayoutOf(have, out) : memory::desc();
  std::size_t count = 0;  // post-ops the conv takes; the rest run after it (lower.h, "Splitting")
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
    // Depthwise: oneDNN 2.6 ranks brdgmm_dw first, but jit_dw with the same
    // layouts is faster for many shapes on some CPUs (up to 2x for
    // mobilenet_v3's 5x5 ones on AMD Zen): measure.
    std::vector<int> keys = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
    for (const auto& [key, arg] : args) keys.push_back(key);
    pd = ConvPd(ChooseImpl(b, pd, "conv", "conv:" + node.name, keys).get());
  }

  Arg src = b.Use(input, pd.src_desc(), node);
  memory weights = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                    [&] { return b.HostView(PlainDesc(wdims), w.data.data()); });
  args.emplace_back(DNNL_ARG_SRC, src);
  if (input != node.inputs[0])
    args.emplace_back(DNNL_ARG_WEIGHTS, EmitScaledWeights(b, node.inputs[0], weights, ChainLabel(b, chain)));
  else
    args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  memory bias_mem = BiasMemory(b, chain.anchor, bias);
  args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
  FinishChain(b, chain, pd, "conv", out, std::move(args), {src.slot}, count);
}

void EmitGemm(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  Chain chain = chain_in;
  if (!b.IsConst(node.inputs.at(1))) Unsupported(b, node, "B must be a constant");
  const Dims stored_a = b.ActOf(node.inputs[0], node).dims;
  Tensor w = b.Const(node.inputs[1], node);
  if (stored_a.size() != 2 || w.dims.size() != 2) Unsupported(b, node, "A and B must be 2-D");
  // transA = 1: A is stored [K, M]; the product reads it as [M, K] through
  // swapped strides (a plain buffer, no copy).
  const bool trans_a = AttrInt(node, "transA", 0) != 0;
  const Dims a = trans_a ? Dims{stored_a[1], stored_a[0]} : stored_a;
  const memory::desc src_md = trans_a ? memory::desc(a, DataType::f32, Dims{1, a[0]}) : PlainDesc(a);
  const float alpha = AttrFloat(node, "alpha", 1.f), beta = AttrFloat(node, "beta", 1.f);
  // B as [N, K] (one row per output, as FoldAffine scales it), viewed as the
  // [K, N] operand of the product.
  if (AttrInt(node, "transB", 0) == 0) {  // [K,N] -> [N,K]
    Tensor t = w;
    for (std::int64_t k = 0; k < w.dims[0]; ++k)
      for (std::int64_t n = 0; n < w.dims[1]; ++n)
        t.data[static_cast<std::size_t>(n * w.dims[0] + k)] = w.data[static_cast<std::size_t>(k * w.dims[1] + n)];
    t.dims = {w.dims[1], w.dims[0]};
    w = std::move(t);
  }
  const std::int64_t n = w.dims[0], k = w.dims[1];
  if (k != a[1]) throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": K differs");
  if (alpha != 1.f)
    for (auto& v : w.data) v *= alpha;
  // C, unidirectionally broadcast to [M, N] (ONNX Gemm-13): one value per
  // output ([N], [1, N], a scalar) is the matmul's bias; any other shape
  // ([M, 1], [M, N]) is added as beta * C, scaled per output by a folded
  // BatchNormalization, by a binary post-op ahead of the chain's own.
  const Tensor* c = node.inputs.size() > 2 && node.inputs[2] != kNoValue ? &b.Const(node.inputs[2], node) : nullptr;
  const bool per_output = !c || c->NumElements() == 1 || (!c->dims.empty() && c->dims.back() == n && c->NumElements() == n);
  std::vector<double> bias = per_output ? BiasOf(b, node, 2, n, beta) : std::vector<double>(static_cast<std::size_t>(n), 0.0);
  if (!per_output) {
    const Dims cd = ExpandRank(c->dims, 2);
    if (c->dims.size() > 2 || (cd[0] != 1 && cd[0] != a[0]) || (cd[1] != 1 && cd[1] != n))
      throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": C of shape " +
                                                DimsString(c->dims) + " does not broadcast to [M, N]");
    Tensor added;
    added.dims = {a[0], n};
    for (std::int64_t i = 0; i < a[0] * n; ++i) {
      double v = beta * ElementAt(*c, BroadcastIndex(i, added.dims, c->dims));
      if (!chain.scale.empty()) v *= chain.scale[static_cast<std::size_t>(i % n)];
      added.data.push_back(static_cast<float>(v));
    }
    chain.post_ops.insert(chain.post_ops.begin(),
                          PostOp{PostOp::Kind::kBinary, dnnl::algorithm::binary_add, 0.f, 0.f, kNoValue, added, 0});
  }
  FoldAffine(chain, w.data, bias, n);

  const memory::desc weights_view({k, n}, DataType::f32, Dims{1, k});  // [N, K] data read as [K, N]
  if (!trans_a && EmitOwnGemm(b, chain, node.inputs[0], {a[0], n}, k, weights_view, w.data.data(), bias)) return;

  // oneDNN's matmul, not inner_product: the same kernels family (brgemm), but
  // at 2 threads matmul splits [197, 768] x [768, 768] (ViT's attention
  // output projection) better: 0.55 against 0.69 ms; never slower at batch 1.
  const Dims out = {a[0], n}, weights_dims = {k, n};
  std::size_t count = 0;
  MatMulPd pd = MakeChainPd<MatMulPd>(b, chain, out, "matmul", count,
                                      [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
                                        if (!dst.is_zero()) return MatMulPd();
                                        return WithGemmWeights(weights_dims, [&](const memory::desc& weights_md) {
                                          return MatMulPd(dnnl::matmul::desc(src_md, weights_md, PlainDesc({1, n}),
                                                                             PlainDesc(out)),
                                                          attr, b.engine);
                                        });
                                      });
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  Arg src;
  if (trans_a) {
    src = b.UsePlain(node.inputs[0], node);
    src.md = src_md;
  } else {
    src = b.Use(node.inputs[0], pd.src_desc(), node);
  }
  memory weights = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                    [&] { return b.HostView(weights_view, w.data.data()); });
  memory bias_mem = BiasMemory(b, chain.anchor, bias, true);
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot}, count);
}

void EmitMatMul(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  // Operands A and B; a deferred scalar factor of either scales the result
  // first (an eltwise_linear post-op of the anchor itself).
  float scale = 1.f;
  const ValueId in_a = TakeScalarScale(b, node.inputs.at(0), scale), in_b = TakeScalarScale(b, node.inputs.at(1), scale);
  Chain chain = chain_in;
  if (scale != 1.f)
    chain.post_ops.insert(chain.post_ops.begin(),
                          PostOp{PostOp::Kind::kEltwise, dnnl::algorithm::eltwise_linear, scale, 0.f, kNoValue, {}, 0});
  Dims a = b.DimsOfValue(in_a, node), w = b.DimsOfValue(in_b, node);
  if (a.size() < 2 || w.size() < 2) Unsupported(b, node, "1-D MatMul operands are not supported");
  if (!b.IsAct(in_a)) Unsupported(b, node, "A must be computed at run time");
  std::size_t rank = std::max(a.size(), w.size());
  Dims ae = ExpandRank(a, rank), we = ExpandRank(w, rank), out;
  try {
    out = BroadcastDims(Dims(ae.begin(), ae.end() - 2), Dims(we.begin(), we.end() - 2));
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": " + e.what());
  }
  if (ae[rank - 1] != we[rank - 2])
    throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": K differs");
  out.push_back(ae[rank - 2]), out.push_back(we[rank - 1]);

  const bool const_weights = b.IsConst(in_b);
  // [B.., M, K] x constant [K, N]: one 2-D [B*M, K] x [K, N] product instead of
  // B products of M rows (vit's [197,1,768] x [768,2304] would be 197 GEMVs);
  // 2-D also lets oneDNN prepack the weights (it keeps 3-D weights plain).
  // Allowed when the post-ops only broadcast along the last axis (bias, eltwise).
  Chain collapsed = chain;
  bool collapse = const_weights && rank > 2 && Product(Dims(we.begin(), we.end() - 2)) == 1;
  for (PostOp& po : collapsed.post_ops) {
    if (po.kind != PostOp::Kind::kBinary) continue;  // eltwise; sum reads a plain view of its addend
    if (!po.constant || Product(po.constant->dims) != po.constant->dims.back()) collapse = false;
    else po.constant->dims = {1, po.constant->dims.back()};
  }
  if (collapse) ae = {Product(ae) / ae[rank - 1], ae[rank - 1]}, we = {we[rank - 2], we[rank - 1]};
  const Dims pd_out = collapse ? Dims{ae[0], we[1]} : out;
  // On AVX2: our own GEMM (lower_gemm.cc).
  if (const_weights && (rank == 2 || collapse) && chain.scale.empty() &&
      EmitOwnGemm(b, chain, in_a, out, we[0], PlainDesc(we), b.Const(in_b, node).data.data(), {}))
    return;
  // Fused: a run-time operand that is a strided view (a transpose) is read in
  // place when a fast kernel takes its strides; otherwise it is made plain.
  // operand_md: its descriptor either way, without taking it yet (a probe).
  auto operand_md = [&](ValueId v, const Dims& expanded, bool plain) {
    if (plain) return PlainDesc(expanded);
    const auto& md = b.ActOf(v, node).md;
    const auto& blk = md.data.format_desc.blocking;
    Dims strides(blk.strides, blk.strides + md.data.ndims);
    while (strides.size() < expanded.size()) strides.insert(strides.begin(), strides.front() * expanded[expanded.size() - strides.size()]);
    return memory::desc(expanded, DataType::f32, strides);
  };
  auto operand = [&](ValueId v, const Dims& expanded, bool plain) {
    Arg arg = plain ? b.UsePlain(v, node) : b.UseAsIs(v, node);
    arg.md = operand_md(v, expanded, plain);
    return arg;
  };
  auto strided = [&](ValueId v) {
    const auto& md = b.ActOf(v, node).md;
    return b.fuse && md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks == 0 &&
           !IsPlainEquivalent(md);
  };
  auto matmul_pd = [&](const memory::desc& src_md, const memory::desc& weights_md, const dnnl::primitive_attr& attr) {
    auto make = [&](const memory::desc& md) {
      return MatMulPd(dnnl::matmul::desc(src_md, md, PlainDesc(pd_out)), attr, b.engine);
    };
    return const_weights ? WithGemmWeights(we, make) : make(weights_md);
  };
  const bool try_strided = !collapse && (strided(in_a) || (!const_weights && strided(in_b)));
  std::size_t count = 0;  // post-ops the matmul takes; the rest run after it (lower.h, "Splitting")
  auto make = [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
    if (!dst.is_zero()) return MatMulPd();  // plain destinations only
    if (try_strided) {
      try {
        const memory::desc weights_md =
            const_weights ? memory::desc() : operand_md(in_b, we, !strided(in_b));
        MatMulPd kept = matmul_pd(operand_md(in_a, ae, !strided(in_a)), weights_md, attr);
        std::string impl = kept.impl_info_str();
        // A product of two run-time operands (attention's Q K^T and P V) may
        // run on gemm: it reads the transposed views in place, where brg
        // needs a copy first (ViT-B/16 at 2 threads: 4.0 -> 2.7 ms per
        // inference for those products with their reorders).
        if (impl.rfind("ref", 0) != 0 && (!const_weights || impl.find("gemm") == std::string::npos)) return kept;
      } catch (const dnnl::error&) {
      }
    }
    return matmul_pd(PlainDesc(ae), const_weights ? memory::desc() : PlainDesc(we), attr);
  };
  MatMulPd pd = MakeChainPd<MatMulPd>(b, chain, out, collapse ? collapsed : chain, pd_out, "matmul", count, make);
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, collapse ? collapsed : chain, pd_out, args, count);
  // The operands as the chosen descriptor reads them (in place only if it took the strided view).
  auto in_place = [&](ValueId v, const Dims& expanded, const memory::desc& md) {
    return try_strided && strided(v) && md == operand_md(v, expanded, false);
  };
  Arg src = operand(in_a, ae, !in_place(in_a, ae, pd.src_desc())), weights;
  if (!const_weights) weights = operand(in_b, we, !in_place(in_b, we, pd.weights_desc()));
  if (const_weights) {
    const Tensor& t = b.Const(in_b, node);
    memory m = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                [&] { return b.HostView(PlainDesc(we), t.data.data()); });
    weights = Arg{-1, m.get_desc(), m};
  }
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, weights);
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot, weights.slot}, count);
}

}  // namespace onnxfuse::backend
