// ConvTranspose chains: deconvolution_forward with the chain's folded
// BatchNormalization and post-ops (the same rules as Conv chains, backend/lower/ops/conv.cc).
//
//   X [N, C_in, D1..Dk]   W [C_in, C_out/group, K1..Kk] (ONNX)   B [C_out]
//
// oneDNN's deconvolution weights are logically [O, I, K..] (group 1) or
// [G, O/G, I/G, K..]; ONNX's bytes are those dims in the order iohw / giohw,
// described here by strides and reordered once into the primitive's layout.
//
// Output size per spatial axis (ONNX Operators.md, ConvTranspose):
//   out = stride * (in - 1) + output_padding + (K - 1) * dilation + 1 - pad_begin - pad_end
// With output_shape (or auto_pad SAME_*: output_shape = in * stride) the pads
// follow from total = stride * (in - 1) + output_padding + (K - 1) * dilation + 1 - out:
//   SAME_UPPER: pad_begin = floor(total / 2), pad_end = total - pad_begin;
//   otherwise:  pad_end = floor(total / 2),   pad_begin = total - pad_end.
// oneDNN has no output_padding: the output is described by its size, so the
// right padding handed to oneDNN, stride * (in - 1) + (K - 1) * dilation + 1 -
// pad_begin - out, goes negative by output_padding (oneDNN accepts that; the
// extra outputs then hold only the bias).
#include "backend/lower/ops/deconv.h"

#include <cmath>

#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "ir/node_label.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

std::int64_t FloorDiv2(std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// Strides of ONNX's [C_in, C_out/G, K..] bytes seen as oneDNN's deconvolution weights.
memory::desc OnnxWeightsDesc(const Dims& w, std::int64_t group) {
  const std::int64_t cin_g = w[0] / group, cout_g = w[1];
  std::int64_t kernel = 1;
  for (std::size_t i = 2; i < w.size(); ++i) kernel *= w[i];
  Dims dims, strides;
  if (group > 1) dims = {group, cout_g, cin_g}, strides = {cin_g * cout_g * kernel, kernel, cout_g * kernel};
  else dims = {cout_g, w[0]}, strides = {kernel, cout_g * kernel};
  std::int64_t inner = kernel;
  for (std::size_t i = 2; i < w.size(); ++i) {
    inner /= w[i];
    dims.push_back(w[i]);
    strides.push_back(inner);
  }
  return memory::desc(dims, DataType::f32, strides);
}

}  // namespace

void EmitDeconv(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  Dims x = b.ActOf(node.inputs[0], node).dims;
  // W or B known only at run time: reordered into the primitive's layout by
  // a step per inference (RuntimeOperand); no BatchNormalization folded then.
  const bool runtime_w = IsRuntimeInput(b, node, 1), runtime_b = IsRuntimeInput(b, node, 2);
  Tensor w;
  if (runtime_w) w.dims = b.DimsOfValue(node.inputs.at(1), node);
  else w = b.Const(node.inputs.at(1), node);
  if (x.size() < 3 || x.size() > 5 || w.dims.size() != x.size()) Unsupported(b, node, "only 1-D to 3-D transposed convolutions");
  const std::size_t spatial = x.size() - 2;
  const std::int64_t group = AttrInt(node, "group", 1);
  if (group < 1 || x[1] != w.dims[0] || w.dims[0] % group != 0)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": channels do not match");
  const std::int64_t out_channels = w.dims[1] * group;
  Dims kernel(w.dims.begin() + 2, w.dims.end());
  if (FindAttr(node, "kernel_shape") && AttrInts(node, "kernel_shape") != kernel)
    Unsupported(b, node, "kernel_shape differs from the weights' spatial dims");
  Dims strides = AttrInts(node, "strides", Dims(spatial, 1)), dilations = AttrInts(node, "dilations", Dims(spatial, 1));
  Dims pads = AttrInts(node, "pads", Dims(2 * spatial, 0)), output_padding = AttrInts(node, "output_padding", Dims(spatial, 0));
  Dims output_shape = AttrInts(node, "output_shape");
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      output_padding.size() != spatial)
    Unsupported(b, node, "strides, dilations, pads or output_padding do not match the spatial rank");
  if (!output_shape.empty() && output_shape.size() == spatial + 2)  // the full output shape: keep its spatial dims
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != spatial)
    Unsupported(b, node, "output_shape does not match the spatial rank");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    Unsupported(b, node, "auto_pad '" + auto_pad + "'");

  Dims out = {x[0], out_channels}, dil, pl(spatial), pr(spatial);
  for (std::size_t i = 0; i < spatial; ++i) {
    if (strides[i] < 1 || dilations[i] < 1) Unsupported(b, node, "strides and dilations must be positive");
    const std::int64_t extent = (kernel[i] - 1) * dilations[i] + 1, natural = strides[i] * (x[i + 2] - 1) + extent;
    std::int64_t o;
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = !output_shape.empty() ? output_shape[i] : x[i + 2] * strides[i];
      std::int64_t total = natural + output_padding[i] - o;
      pl[i] = auto_pad == "SAME_UPPER" ? FloorDiv2(total) : total - FloorDiv2(total);
    } else {
      std::int64_t begin = auto_pad == "VALID" ? 0 : pads[i], end = auto_pad == "VALID" ? 0 : pads[i + spatial];
      o = natural + output_padding[i] - begin - end;
      pl[i] = begin;
    }
    if (o < 1) Unsupported(b, node, "empty output along spatial axis " + std::to_string(i));
    pr[i] = natural - pl[i] - o;  // negative by output_padding
    out.push_back(o);
    dil.push_back(dilations[i] - 1);
  }

  // Bias per output channel; the chain's folded BatchNormalization scales
  // output channel o = g * C_out/G + oc, whose weights are W[ci, oc, ..] for
  // the input channels ci of group g.
  std::vector<double> bias(static_cast<std::size_t>(out_channels), 0.0);
  if (runtime_b && b.DimsOfValue(node.inputs[2], node) != Dims{out_channels})
    Unsupported(b, node, "B must have one value per output channel");
  if (!runtime_b && node.inputs.size() > 2 && node.inputs[2] != kNoValue) {
    const Tensor& t = b.Const(node.inputs[2], node);
    if (t.NumElements() != out_channels) Unsupported(b, node, "B must have one value per output channel");
    for (std::size_t o = 0; o < bias.size(); ++o) bias[o] = eval::ElementAt(t, static_cast<std::int64_t>(o));
  }
  if (!chain.affine.scale.empty()) {
    if (runtime_w || runtime_b)
      throw Error(ErrorKind::kInternal,
                  "internal error: " + NodeLabel(node) + ": a BatchNormalization folded into run-time weights");
    if (chain.affine.scale.size() != bias.size())
      Unsupported(b, node, "folded BatchNormalization has the wrong channel count");
    eval::ScaleWeights(w.data, w.dims, eval::WeightLayout::kConvTranspose, group, chain.affine.scale);
    eval::FoldIntoBias(bias, chain.affine);
  }

  const memory::desc plain_weights = OnnxWeightsDesc(w.dims, group);
  using DeconvPd = dnnl::deconvolution_forward::primitive_desc;
  auto deconv_desc = [&](const memory::desc& src_md, const memory::desc& dst_md) {
    return dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                             src_md, AnyDesc(plain_weights.dims()), PlainDesc({out_channels}), dst_md,
                                             strides, dil, pl, pr);
  };
  std::size_t count = 0;  // post-ops the deconvolution takes; the rest run after it (chain.h, "Splitting")
  DeconvPd pd = MakeChainPd<DeconvPd>(
      b, chain, out, "deconv", count, [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
        if (!dst.is_zero()) return DeconvPd(deconv_desc(WithLayoutOf(dst, x), dst), attr, b.engine);
        return DeconvPd(deconv_desc(b.fuse ? AnyDesc(x) : PlainDesc(x), b.fuse ? AnyDesc(out) : PlainDesc(out)), attr,
                        b.engine);
      });
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  Arg src = b.Use(node.inputs[0], pd.src_desc(), node);
  args.emplace_back(DNNL_ARG_SRC, src);
  const std::string label = ChainLabel(b, chain);
  if (runtime_w) {
    args.emplace_back(DNNL_ARG_WEIGHTS, RuntimeOperand(b, node.inputs[1], node, plain_weights, pd.weights_desc(),
                                                       label + " (weights)"));
  } else {  // prepacked once; recorded in (or, replaying, taken from) a plan file, as Conv's
    memory weights = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                      [&] { return b.HostView(plain_weights, w.data.data()); });
    args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  }
  if (runtime_b) {
    args.emplace_back(DNNL_ARG_BIAS, RuntimeOperand(b, node.inputs[2], node, PlainDesc({out_channels}),
                                                    pd.bias_desc(), label + " (bias)"));
  } else {
    memory bias_mem = BiasMemory(b, chain.anchor, bias);
    args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
  }
  std::vector<int> read;
  for (const auto& [key, arg] : args) read.push_back(arg.slot);
  FinishChain(b, chain, pd, "deconv", out, std::move(args), read, count);
}

}  // namespace onnxfuse::backend
