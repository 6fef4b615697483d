// 3x3 convolutions as Winograd's F(2x2, 3x3) over our own GEMM
// (backend/kernels/winograd.h), on AVX2 CPUs where oneDNN 2.6 has no Winograd kernel.
#include "backend/lower/own_kernels/own_kernels.h"

#include <omp.h>

#include "ir/attributes.h"
#include "backend/kernels/gemm.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/operands.h"
#include "backend/kernels/winograd.h"

namespace onnxfuse::backend {

namespace {

// At least this many input and output channels: below, the transforms (a
// pass over 16 / 4 times the input and output) outweigh the 2.25 times fewer
// multiply-adds.
constexpr std::int64_t kMinChannels = 64;

bool FitsWinograd(const Builder& b, const Node& conv, ValueId input, const Act& x, const Dims& w,
                  const ConvGeometry& g) {
  if (!b.fuse || !HaveGemm() || input != conv.inputs[0] || x.dims.size() != 4 || x.dims[0] != 1) return false;
  if (w.size() != 4 || w[2] != 3 || w[3] != 3 || AttrInt(conv, "group", 1) != 1) return false;
  if (x.dims[1] % 8 != 0 || x.dims[1] < kMinChannels || w[0] % kGemmPanel != 0 || w[0] < kMinChannels) return false;
  for (std::size_t i = 0; i < 2; ++i)
    if (g.strides[i] != 1 || g.dil[i] != 0 || g.pl[i] != 1 || g.pr[i] != 1) return false;
  return ChannelBlockOf(x.md, x.dims) == 8;
}

}  // namespace

bool EmitConvWinograd(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                      const ConvGeometry& geometry) {
  const Node& node = b.graph.node(chain.anchor);
  const Act x = b.ActOf(input, node);  // a copy: emitting may move the Builder's acts
  if (!FitsWinograd(b, node, input, x, w.dims(), geometry)) return false;
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = GemmEpilogueOf(chain, &sum);
  if (!epilogue) return false;

  WinogradShape shape;
  shape.channels = x.dims[1], shape.out_channels = w.dims()[0], shape.height = x.dims[2], shape.width = x.dims[3];
  const std::vector<float> u = PackWinogradWeights(w.data().data(), shape.out_channels, shape.channels);
  const dnnl::memory u_mem = b.HostMemory(PlainDesc({static_cast<std::int64_t>(u.size())}), u.data());
  const dnnl::memory bias_mem = BiasMemory(b, chain.anchor, bias);
  const Dims& out = geometry.out;
  const Arg src = b.UseAsIs(input, node);
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, ChannelBlockedDesc(out, 8), addend);
  std::vector<std::pair<int, Arg>> args = {{0, src},
                                           {1, Arg{dst.slot, dst.md, {}}},
                                           {2, Arg{-1, u_mem.get_desc(), u_mem}},
                                           {3, Arg{-1, bias_mem.get_desc(), bias_mem}}};
  if (addend) args.push_back({4, *addend});
  const std::int64_t scratch_bytes = WinogradScratchBytes(shape, omp_get_max_threads());
  b.EmitCustom(
      "conv", ChainLabel(b, chain), std::move(args),
      [shape, ops = std::move(*epilogue), has_addend = addend.has_value(), scratch_bytes](const std::vector<void*>& data) {
        WinogradConv3x3(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]),
                        static_cast<const float*>(data[3]), has_addend ? static_cast<const float*>(data[4]) : nullptr,
                        static_cast<float*>(data[1]), shape, ops, static_cast<float*>(data.back()), scratch_bytes);
      },
      dst.md, "onnxfuse:winograd", scratch_bytes);
  b.steps.back().flops = ConvFlops(Product(out), out[1], Product(w.dims()));  // the direct algorithm's
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
