// Pooling: MaxPool, AveragePool and their Global forms as oneDNN's pooling
// primitive, or, fused, as our own max pooling (backend/kernels/max_pool.h) on
// channel-blocked and channels-last data; GlobalAveragePool as the spatial
// mean (spatial_mean.h); over a deferred concat, one pooling per part.
#include "backend/lower/ops/pool.h"

#include <optional>

#include "backend/kernels/activation.h"
#include "ir/attributes.h"
#include "backend/lower/ops/concat.h"
#include "backend/lower/ops/spatial_mean.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "backend/kernels/max_pool.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::algorithm;
using dnnl::memory;

namespace {

// A 2-D max pooling (dilation 1) of `src` (dims `in`) in a channel-blocked or
// channels-last layout as our own kernel (backend/kernels/max_pool.h), its result in
// the same layout; nullopt (nothing emitted) for other poolings and layouts.
std::optional<Act> EmitOwnMaxPool(Builder& b, const Arg& src, const Dims& in, const Dims& out, const Dims& kernel,
                                  const Dims& strides, const Dims& dilations, const Dims& pads_begin,
                                  const std::string& label) {
  if (in.size() != 4 || dilations != Dims{1, 1}) return std::nullopt;
  const std::optional<ChannelVectors> vectors = ChannelVectorsOf(src.md, in);
  if (!vectors) return std::nullopt;
  MaxPoolShape shape;
  shape.planes = in[0] * vectors->blocks, shape.lanes = vectors->lanes;
  // One block of all C channels is channels-last; otherwise channel-blocked.
  const memory::desc dst_md = vectors->blocks == 1 && vectors->lanes == in[1] ? ChannelsLastDesc(out)
                                                                               : ChannelBlockedDesc(out, vectors->lanes);
  shape.in_h = in[2], shape.in_w = in[3], shape.out_h = out[2], shape.out_w = out[3];
  shape.kernel_h = kernel[0], shape.kernel_w = kernel[1], shape.stride_h = strides[0], shape.stride_w = strides[1];
  shape.pad_top = pads_begin[0], shape.pad_left = pads_begin[1];
  const Act dst = b.NewAct(out, dst_md);
  b.EmitCustom("pooling", label, {{0, src}, {1, Arg{dst.slot, dst_md, {}}}},
               [shape](const std::vector<void*>& data) {
                 MaxPool2d(static_cast<const float*>(data[0]), static_cast<float*>(data[1]), shape);
               },
               dst_md, "onnxfuse:max_pool");
  return dst;
}

}  // namespace

void EmitPool(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  if (node.outputs.size() > 1 && node.outputs[1] != kNoValue && !b.graph.value(node.outputs[1]).consumers.empty())
    Unsupported(b, node, "the Indices output is not supported");
  auto deferred = b.deferred_concats.find(node.inputs.at(0));
  Dims x = deferred != b.deferred_concats.end() ? deferred->second.out : b.ActOf(node.inputs[0], node).dims;
  if (x.size() < 3 || x.size() > 5) Unsupported(b, node, "only 1-D to 3-D pooling");
  const std::size_t spatial = x.size() - 2;
  bool global = op.rfind("Global", 0) == 0;
  Dims kernel(x.begin() + 2, x.end()), strides(spatial, 1), dilations(spatial, 1), pads(2 * spatial, 0);
  if (!global) {
    kernel = AttrInts(node, "kernel_shape");
    strides = AttrInts(node, "strides", strides), dilations = AttrInts(node, "dilations", dilations);
    pads = AttrInts(node, "pads", pads);
    if (kernel.size() != spatial) Unsupported(b, node, "kernel_shape does not match the input rank");
  }
  std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  bool ceil_mode = AttrInt(node, "ceil_mode", 0) != 0;
  Dims pl(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial)), pr(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());
  Dims out = {x[0], x[1]}, dil;
  for (std::size_t i = 0; i < spatial; ++i) {
    std::int64_t in = x[i + 2], extent = (kernel[i] - 1) * dilations[i] + 1, o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (in + strides[i] - 1) / strides[i];
      std::int64_t total = std::max<std::int64_t>(0, (o - 1) * strides[i] + extent - in);
      pl[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pr[i] = total - pl[i];
    } else {
      if (auto_pad == "VALID") pl[i] = pr[i] = 0;
      std::int64_t span = in + pl[i] + pr[i] - extent;
      o = (ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
      if (ceil_mode && (o - 1) * strides[i] >= in + pl[i]) --o;  // the last window must start inside
      pr[i] = (o - 1) * strides[i] + extent - in - pl[i];          // right padding oneDNN needs for `o`
    }
    out.push_back(o);
    dil.push_back(dilations[i] - 1);
  }
  algorithm alg = op.find("Max") != std::string::npos ? algorithm::pooling_max
                  : AttrInt(node, "count_include_pad", 0) ? algorithm::pooling_avg_include_padding
                                                           : algorithm::pooling_avg_exclude_padding;
  // One pooling of `src` (dims `in`: the input's, or one part's of a deferred concat).
  auto pool = [&](const Arg& src, const Dims& in, const std::string& label) {
    Dims dims = out;
    dims[1] = in[1];
    if (b.fuse && alg == algorithm::pooling_max)
      if (auto dst = EmitOwnMaxPool(b, src, in, dims, kernel, strides, dilations, pl, label)) return *dst;
    if (op == "GlobalAveragePool") return EmitSpatialMean(b, node, src, in, label);
    auto dst_md = b.fuse ? AnyDesc(dims) : PlainDesc(dims);
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src.md, dst_md, strides, kernel, dil,
                                        pl, pr);
    auto pd = MakePd<dnnl::pooling_v2_forward::primitive_desc>(b, node, desc, b.Attr());
    Arg read = src;
    if (IsSlowPrimitive("pooling", pd)) {
      // oneDNN 2.6 picks its reference kernel for some layouts (a [1,1,1,9]
      // source with a destination it chose): plain, then channels-last, in
      // and out, where a jit kernel takes them.
      for (const auto& [in_md, out_md] : {std::pair{PlainDesc(in), PlainDesc(dims)},
                                          std::pair{ChannelsLastDesc(in), ChannelsLastDesc(dims)}}) {
        try {
          const dnnl::pooling_v2_forward::primitive_desc alt(
              dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, alg, in_md, out_md, strides, kernel,
                                             dil, pl, pr),
              b.Attr(), b.engine);
          if (IsSlowPrimitive("pooling", alt)) continue;
          pd = alt;
          if (src.md != in_md) {
            const Act copy = b.EmitReorder(src, in, in_md, label);
            read = Arg{copy.slot, copy.md, {}};
          }
          break;
        } catch (const dnnl::error&) {
        }
      }
    }
    Act dst = b.NewAct(dims, pd.dst_desc());
    b.Emit(pd, "pooling", label, {{DNNL_ARG_SRC, read}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
    return dst;
  };
  if (deferred != b.deferred_concats.end()) {
    const std::string concat = deferred->second.name;
    int part = 0;
    PoolConcatParts(b, node, [&](const Act& p) {
      return pool(Arg{p.slot, p.md, {}}, p.dims, node.name + " (" + concat + " part " + std::to_string(++part) + ")");
    });
    return;
  }
  b.SetAct(node.outputs[0], pool(OpInput(b, node, 0), x, node.name));
}

}  // namespace onnxfuse::backend
