// MatMul and Gemm with constant weights on AVX2 as our own GEMM
// (gemm_kernel.h), where oneDNN 2.6 runs them on its slower sgemm; and
// convolutions on small maps, where its jit:avx2 convolution is slow.
#include <algorithm>
#include <optional>

#include "gemm_kernel.h"
#include "lower.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// At least this many rows: below, the product is a few GEMVs bound by reading
// the weights, where oneDNN's gemm is as fast (a classifier's single row).
constexpr std::int64_t kMinRows = 16;

// Convolutions with at most this many output pixels (ResNet's and GoogLeNet's
// 7x7 stages): there oneDNN 2.6's jit:avx2 convolution, blocking the output
// row's 7 pixels, runs at 70-80 GFLOPS on one Zen 3 core (ResNet-50's 3x3
// 512 -> 512: 3.0 ms); at 14x14 and beyond it reaches 88-95, as this GEMM.
constexpr std::int64_t kMaxConvRows = 64;
// And at least this many output channels: every thread packs the im2col rows
// once per call, which fewer column panels do not repay (DenseNet's 3x3
// 128 -> 32 at 7x7: 0.095 ms against oneDNN's 0.049).
constexpr std::int64_t kMinConvColumns = 64;

// [depth, cols] blocked by kGemmPanel columns: block p holds [depth][16]
// (oneDNN's blocking descriptor: inner block 16 on dim 1).
memory::desc PanelDesc(std::int64_t depth, std::int64_t cols) {
  memory::desc md(Dims{depth, cols}, memory::data_type::f32, Dims{kGemmPanel, depth * kGemmPanel});
  dnnl_memory_desc_t& d = md.data;
  d.format_desc.blocking.inner_nblks = 1;
  d.format_desc.blocking.inner_blks[0] = kGemmPanel;
  d.format_desc.blocking.inner_idxs[0] = 1;
  return md;
}

// The epilogue of `chain`, its residual in `*sum`: nullopt when the GEMM
// cannot apply it (an Add other than first: it adds the residual at the start).
std::optional<std::vector<PointwiseOp>> GemmEpilogueOf(const Chain& chain, const PostOp** sum) {
  std::optional<std::vector<PointwiseOp>> epilogue = EpilogueOf(chain, sum);
  if (!epilogue) return std::nullopt;
  for (std::size_t i = 1; i < epilogue->size(); ++i)
    if ((*epilogue)[i].kind == PointwiseOp::Kind::kAdd) return std::nullopt;
  return epilogue;
}

// Emits the GEMM step: arguments a, c, packed weights, then the bias and the
// residual if any.
void EmitGemmStep(Builder& b, const std::string& kind, const std::string& label, const Arg& src, const Act& dst,
                  const memory& packed, const std::optional<memory>& bias, const std::optional<Arg>& addend,
                  const GemmShape& shape, std::vector<PointwiseOp> epilogue,
                  const std::optional<GemmConvRows>& conv = std::nullopt) {
  std::vector<std::pair<int, Arg>> args = {
      {0, src}, {1, Arg{dst.slot, dst.md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  const int bias_index = bias ? 3 : -1, addend_index = bias ? 4 : 3;
  if (bias) args.push_back({3, Arg{-1, bias->get_desc(), *bias}});
  if (addend) args.push_back({addend_index, *addend});
  b.EmitCustom(
      kind, label, std::move(args),
      [shape, ops = std::move(epilogue), bias_index, addend_index, conv](const std::vector<void*>& data) {
        const auto* bias_data =
            bias_index >= 0 ? static_cast<const float*>(data[static_cast<std::size_t>(bias_index)]) : nullptr;
        const auto* addend_data = static_cast<std::size_t>(addend_index) < data.size()
                                      ? static_cast<const float*>(data[static_cast<std::size_t>(addend_index)])
                                      : nullptr;
        GemmLayout layout;
        if (conv) layout.conv = &*conv, layout.blocked_c = true;
        Gemm(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]), bias_data, addend_data,
             static_cast<float*>(data[1]), shape, ops, layout);
      },
      dst.md, "onnxfuse:gemm");
}

// A first post-op adding a constant of one value per column: the bias.
bool TakeBias(Chain& chain, std::int64_t cols, std::vector<double>& bias) {
  if (chain.post_ops.empty()) return false;
  const PostOp& po = chain.post_ops.front();
  if (po.kind != PostOp::Kind::kBinary || po.alg != dnnl::algorithm::binary_add || !po.constant) return false;
  const Tensor& t = *po.constant;
  if (t.dims.empty() || t.dims.back() != cols || Product(t.dims) != cols) return false;
  bias.assign(t.data.begin(), t.data.end());
  chain.post_ops.erase(chain.post_ops.begin());
  return true;
}

}  // namespace

bool EmitOwnGemm(Builder& b, const Chain& chain_in, ValueId input, const Dims& out, std::int64_t depth,
                 const memory::desc& weights_md, const float* weights, std::vector<double> bias) {
  const Node& node = b.graph.node(chain_in.anchor);
  const std::int64_t cols = out.back(), rows = Product(out) / cols;
  if (!b.fuse || !HaveGemm() || cols % kGemmPanel != 0 || rows < kMinRows || !chain_in.scale.empty()) return false;
  Chain chain = chain_in;
  if (bias.empty()) TakeBias(chain, cols, bias);
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = GemmEpilogueOf(chain, &sum);
  if (!epilogue) return false;

  memory packed = b.PackedConstant(chain.anchor, "weights", PanelDesc(depth, cols),
                                   [&] { return b.HostView(weights_md, weights); });
  std::optional<memory> bias_mem;
  if (!bias.empty()) bias_mem = BiasMemory(b, chain.anchor, bias);
  Arg src = b.Use(input, PlainDesc({rows, depth}), node);
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, PlainDesc(out), addend);
  EmitGemmStep(b, "matmul", ChainLabel(b, chain_in), src, dst, packed, bias_mem, addend, {rows, depth, cols},
               std::move(*epilogue));
  b.SetAct(chain.out, dst);
  return true;
}

bool EmitConvGemm(Builder& b, const Chain& chain, ValueId input, const Tensor& w, const std::vector<double>& bias,
                  const ConvGeometry& geometry) {
  const Node& node = b.graph.node(chain.anchor);
  const Act x = b.ActOf(input, node);  // a copy: emitting may move the Builder's acts
  const Dims& out = geometry.out;
  if (!b.fuse || !HaveGemm() || input != node.inputs[0] || x.dims.size() != 4 || x.dims[0] != 1) return false;
  const std::int64_t out_channels = w.dims[0], channels = x.dims[1], pixels = out[2] * out[3];
  if (AttrInt(node, "group", 1) != 1 || out_channels % kGemmPanel != 0 || out_channels < kMinConvColumns ||
      pixels > kMaxConvRows)
    return false;
  if (std::any_of(geometry.dil.begin(), geometry.dil.end(), [](std::int64_t d) { return d != 0; })) return false;
  if (ChannelBlockOf(x.md, x.dims) != 8) return false;
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = GemmEpilogueOf(chain, &sum);
  if (!epilogue) return false;

  // Weights [O][kh][kw][C] in panels of 16 output channels: oneDNN's Ohwi16o.
  const memory::desc panels(w.dims, memory::data_type::f32, memory::format_tag::Ohwi16o);
  memory packed = b.PackedConstant(chain.anchor, "weights", panels,
                                   [&] { return b.HostView(PlainDesc(w.dims), w.data.data()); });
  std::optional<memory> bias_mem = BiasMemory(b, chain.anchor, bias);
  const memory::desc dst_md = ChannelBlockedDesc(out, 8);
  const Arg src = b.UseAsIs(input, node);
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, dst_md, addend);
  GemmConvRows conv;
  conv.channels = channels, conv.in_h = x.dims[2], conv.in_w = x.dims[3], conv.out_w = out[3];
  conv.kernel_h = w.dims[2], conv.kernel_w = w.dims[3];
  conv.stride_h = geometry.strides[0], conv.stride_w = geometry.strides[1];
  conv.pad_top = geometry.pl[0], conv.pad_left = geometry.pl[1];
  EmitGemmStep(b, "conv", ChainLabel(b, chain), src, dst, packed, bias_mem, addend,
               {pixels, w.dims[1] * w.dims[2] * w.dims[3], out_channels}, std::move(*epilogue), conv);
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
