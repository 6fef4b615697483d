// GlobalAveragePool and ReduceMean over the spatial axes: one mean.
#include "backend/lower/ops/spatial_mean.h"

#include "backend/kernels/activation.h"
#include "backend/kernels/reduce.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

using dnnl::memory;

Act EmitSpatialMean(Builder& b, const Node& node, const Arg& src, const Dims& in, const std::string& label) {
  Dims out = in;
  for (std::size_t d = 2; d < out.size(); ++d) out[d] = 1;
  const memory::desc dst_md = PlainDesc(out);
  if (out == in) return b.EmitReorder(src, out, dst_md, label);
  // Our kernel reads the producer's channel-blocked or channels-last layout as
  // it is, where oneDNN's reduction wants it plain and then took 0.46 ms on
  // mnasnet1_0's [1, 1280, 7, 7] (1 thread, Xeon Sapphire Rapids; 8% of the model).
  if (b.fuse && in.size() == 4) {
    if (const std::optional<ChannelVectors> vectors = ChannelVectorsOf(src.md, in)) {
      const Act dst = b.NewAct(out, dst_md);
      const std::int64_t images = in[0], channels = in[1], rows = in[2] * in[3];
      b.EmitCustom("pooling", label, {{0, src}, {1, Arg{dst.slot, dst_md, {}}}},
                   [images, channels, rows, vectors = *vectors](const std::vector<void*>& data) {
                     ChannelMeans(static_cast<const float*>(data[0]), images, vectors.blocks, rows, vectors.lanes,
                                  channels, static_cast<float*>(data[1]));
                   },
                   dst_md, "onnxfuse:global_average_pool");
      return dst;
    }
  }
  Arg plain = src;
  if (src.md != PlainDesc(in)) {
    const Act reordered = b.EmitReorder(src, in, PlainDesc(in), label);
    plain = Arg{reordered.slot, reordered.md, {}};
  }
  dnnl::reduction::primitive_desc pd;
  try {
    dnnl::reduction::desc desc(dnnl::algorithm::reduction_mean, plain.md, dst_md, 0.f, 0.f);
    pd = dnnl::reduction::primitive_desc(desc, b.Attr(), b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
  if (IsSlowImpl("reduction", pd.impl_info_str())) {
    // oneDNN 2.6's reduction runs its reference kernel where the last spatial
    // dim is 1 ([1, 16, 12, 1]): our kernel's mean of each plane instead.
    const Act dst = b.NewAct(out, dst_md);
    std::int64_t planes = in[0] * in[1], pixels = 1;
    for (std::size_t d = 2; d < in.size(); ++d) pixels *= in[d];
    const ReduceStep mean{ReduceFold::kSum, ReduceMap::kNone, ReduceMap::kScale, 1.f / static_cast<float>(pixels)};
    b.EmitCustom("reduction", label, {{0, plain}, {1, Arg{dst.slot, dst_md, {}}}},
                 [mean, planes, pixels](const std::vector<void*>& data) {
                   ReduceMiddle(mean, static_cast<const float*>(data[0]), static_cast<float*>(data[1]), planes, pixels, 1);
                 },
                 dst_md, "onnxfuse:reduce");
    return dst;
  }
  const Act dst = b.NewAct(out, pd.dst_desc());
  b.Emit(pd, "reduction", label, {{DNNL_ARG_SRC, plain}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  return dst;
}

}  // namespace onnxfuse::backend
