// MatMul and Gemm with constant weights on AVX2 as our own GEMM
// (backend/kernels/gemm.h), where oneDNN 2.6 runs them on its slower sgemm; and
// convolutions on small maps, where its jit:avx2 convolution is slow.
#include "backend/lower/own_kernels/own_kernels.h"

#include <algorithm>
#include <optional>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/gemm.h"
#include "backend/kernels/gemv.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/fused/channel_scale.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/operands.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// At least this many rows; a single row is MatVec's (backend/kernels/gemv.h).
// Below 16 rows oneDNN's gemm:jit, on weights transposed (ba), took 1.5-2x
// this GEMM's time (BERT-shaped encoder at lengths 2-12, 1 thread, Zen 3:
// 3.3-4.8 ms a call against 1.4-2.7), and a model served at lengths on both
// sides of a threshold held its weights in both layouts.
constexpr std::int64_t kMinRows = 2;

// Convolutions with at most this many output pixels (ResNet's and GoogLeNet's
// 7x7 stages): there oneDNN 2.6's jit:avx2 convolution, blocking the output
// row's 7 pixels, runs at 70-80 GFLOPS on one Zen 3 core (ResNet-50's 3x3
// 512 -> 512: 3.0 ms); at 14x14 and beyond it reaches 88-95, as this GEMM.
constexpr std::int64_t kMaxConvRows = 64;
// Spatial convolutions (kernel beyond 1x1) with a deep im2col row (C kh kw at
// least 512) into at most 196 pixels (the 14x14 stages) as well: there
// oneDNN's jit:avx2 runs at 88-91 GFLOPS, this GEMM at 90-93 (GoogLeNet's
// inception4e 3x3 160 -> 320: 1.99 -> 1.93 ms; ResNet-18's layer3 3x3 256 ->
// 256: 2.55-2.59 -> 2.52-2.55 ms). Not 1x1 ones at 14x14 (oneDNN's jit_1x1
// 84-95 GFLOPS, this GEMM 74-88) nor shallow rows (GoogLeNet's 3x3 32 -> 128:
// 0.16 -> 0.17 ms).
constexpr std::int64_t kMaxSpatialConvRows = 196;
constexpr std::int64_t kMinSpatialConvDepth = 512;
// And at least this many output channels: the im2col rows are packed once
// per call, which fewer column panels do not repay (DenseNet's 3x3
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

// A custom step's arguments: the fixed ones, then those of the optional ones
// that are present, each at the next index (Add returns it; -1 when absent).
struct StepArgs {
  std::vector<std::pair<int, Arg>> list;
  int Add(const std::optional<Arg>& arg) {
    if (!arg) return -1;
    list.push_back({static_cast<int>(list.size()), *arg});
    return static_cast<int>(list.size()) - 1;
  }
};

// A step's argument `index` (StepArgs::Add) as floats; nullptr for -1.
const float* ArgData(const std::vector<void*>& data, int index) {
  return index >= 0 ? static_cast<const float*>(data[static_cast<std::size_t>(index)]) : nullptr;
}

// `memory` (a constant) as a step argument; nullopt when absent.
std::optional<Arg> ConstArg(const std::optional<memory>& m) {
  return m ? std::optional<Arg>(Arg{-1, m->get_desc(), *m}) : std::nullopt;
}

// Emits the GEMM step: arguments a, c, packed weights, then those present of
// the bias, the residual and (a convolution's) the channel scale.
void EmitGemmStep(Builder& b, const std::string& kind, const std::string& label, const Arg& src, const Act& dst,
                  const memory& packed, const std::optional<memory>& bias, const std::optional<Arg>& addend,
                  const GemmShape& shape, std::vector<PointwiseOp> epilogue,
                  const std::optional<GemmConvRows>& conv = std::nullopt,
                  const std::optional<Arg>& channel_scale = std::nullopt) {
  StepArgs args;
  args.list = {{0, src}, {1, Arg{dst.slot, dst.md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  const int bias_index = args.Add(ConstArg(bias)), addend_index = args.Add(addend),
            scale_index = args.Add(channel_scale);
  b.EmitCustom(
      kind, label, std::move(args.list),
      [shape, ops = std::move(epilogue), bias_index, addend_index, scale_index, conv](const std::vector<void*>& data) {
        GemmLayout layout;
        GemmConvRows rows;
        if (conv) {
          rows = *conv;
          rows.channel_scale = ArgData(data, scale_index);
          layout.conv = &rows, layout.blocked_c = true;
        }
        Gemm(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]), ArgData(data, bias_index),
             ArgData(data, addend_index), static_cast<float*>(data[1]), shape, ops, layout);
      },
      dst.md, "onnxfuse:gemm");
  b.steps.back().flops = 2.0 * static_cast<double>(shape.rows) * static_cast<double>(shape.depth) *
                         static_cast<double>(shape.cols);
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

// Whether the epilogue's residual Add, if any, comes first: Gemm adds the
// residual as it starts a tile.
bool ResidualFirst(const std::vector<PointwiseOp>& epilogue) {
  for (std::size_t i = 1; i < epilogue.size(); ++i)
    if (epilogue[i].kind == PointwiseOp::Kind::kAdd) return false;
  return true;
}

// One row times the weights (a classifier at batch 1) as MatVec, the
// weights stored as its rows [cols, depth]: dims [depth, cols] with strides
// {1, depth}, so that a plan file's constant has the dims oneDNN's matmul
// weights would. MatVec applies the epilogue's steps in any order.
void EmitGemv(Builder& b, const Chain& chain, ValueId input, const Dims& out, std::int64_t depth, std::int64_t cols,
              const memory::desc& weights_md, const std::function<const float*()>& weights, const std::vector<double>& bias,
              const PostOp* sum, std::vector<PointwiseOp> epilogue, const std::string& label) {
  const Node& node = b.graph.node(chain.anchor);
  const memory::desc rows_md(Dims{depth, cols}, memory::data_type::f32, Dims{1, depth});
  memory packed = b.PackedConstant(chain.anchor, "weights", rows_md, [&] { return b.HostView(weights_md, weights()); });
  std::optional<memory> bias_mem;
  if (!bias.empty()) bias_mem = BiasMemory(b, chain.anchor, bias);
  const Arg src = b.Use(input, PlainDesc({1, depth}), node);
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, PlainDesc(out), addend);
  StepArgs args;
  args.list = {{0, src}, {1, Arg{dst.slot, dst.md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  const int bias_index = args.Add(ConstArg(bias_mem)), addend_index = args.Add(addend);
  b.EmitCustom(
      "matmul", label, std::move(args.list),
      [depth, cols, ops = std::move(epilogue), bias_index, addend_index](const std::vector<void*>& data) {
        MatVec(static_cast<const float*>(data[2]), ArgData(data, bias_index), static_cast<const float*>(data[0]),
               static_cast<float*>(data[1]), cols, depth, ops, ArgData(data, addend_index));
      },
      dst.md, "onnxfuse:gemv");
  b.steps.back().flops = 2.0 * static_cast<double>(depth) * static_cast<double>(cols);
  b.SetAct(chain.out, dst);
}

// Whether the rows of `node`'s product change from one shape a session
// compiles to the next (Builder::VaryingDimsOf). On AVX-512 such a product
// is first offered to a oneDNN matmul with the rows given at run time
// (EmitAnyRowsMatMul, any_shape_matmul.h); where oneDNN has none, this GEMM
// runs it rather than a brgemm matmul compiled for the exact rows (0.2-0.6
// ms per product at each new length on a Zen 4).
bool RowsVary(const Builder& b, const Node& node) {
  const std::vector<bool> varying = b.VaryingDimsOf(node.outputs.at(0));
  return !varying.empty() && std::find(varying.begin(), varying.end() - 1, true) != varying.end() - 1;
}

}  // namespace

std::optional<std::vector<PointwiseOp>> GemmEpilogueOf(const Chain& chain, const PostOp** sum) {
  std::optional<std::vector<PointwiseOp>> epilogue = EpilogueOf(chain, sum);
  if (!epilogue || !ResidualFirst(*epilogue)) return std::nullopt;
  return epilogue;
}

bool EmitOwnGemm(Builder& b, const Chain& chain_in, ValueId input, const Dims& out, std::int64_t depth,
                 const memory::desc& weights_md, const std::function<const float*()>& weights,
                 std::vector<double> bias) {
  const Node& node = b.graph.node(chain_in.anchor);
  const std::int64_t cols = out.back(), rows = Product(out) / cols;
  // One row (a classifier at batch 1) is bound by reading the weights: MatVec
  // reads them in four streams on any CPU with AVX2, AVX-512 ones too, where
  // oneDNN's brgemm matmul streams them at half the rate (mobilenet_v3_large's
  // [1280, 1000] classifier: 0.22 ms instead of 0.41 on one Zen 4 core).
  const bool one_row = rows == 1 && CpuIsa() != Isa::kScalar;
  if (!b.fuse || !(one_row || HaveGemm() || RowsVary(b, node)) ||
      (rows > 1 && (cols % kGemmPanel != 0 || rows < kMinRows)))
    return false;
  Chain chain = chain_in;
  if (bias.empty()) TakeBias(chain, cols, bias);
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = EpilogueOf(chain, &sum);
  if (!epilogue) return false;
  if (rows == 1) {
    EmitGemv(b, chain, input, out, depth, cols, weights_md, weights, bias, sum, std::move(*epilogue),
             ChainLabel(b, chain_in));
    return true;
  }
  if (!ResidualFirst(*epilogue)) return false;

  memory packed = b.PackedConstant(chain.anchor, "weights", PanelDesc(depth, cols),
                                   [&] { return b.HostView(weights_md, weights()); });
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

bool ConvFitsGemm(const Builder& b, const Node& conv, const Act& x, const Dims& w, const ConvGeometry& geometry) {
  if (!b.fuse || !HaveGemm() || x.dims.size() != 4 || x.dims[0] != 1 || w.size() != 4) return false;
  const std::int64_t out_channels = w[0], pixels = geometry.out[2] * geometry.out[3], taps = w[2] * w[3];
  const std::int64_t max_rows = taps > 1 && w[1] * taps >= kMinSpatialConvDepth ? kMaxSpatialConvRows : kMaxConvRows;
  if (AttrInt(conv, "group", 1) != 1 || out_channels % kGemmPanel != 0 || out_channels < kMinConvColumns ||
      pixels > max_rows)
    return false;
  if (std::any_of(geometry.dil.begin(), geometry.dil.end(), [](std::int64_t d) { return d != 0; })) return false;
  return ChannelBlockOf(x.md, x.dims) == 8;
}

bool EmitConvGemm(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                  const ConvGeometry& geometry) {
  const Node& node = b.graph.node(chain.anchor);
  const Act x = b.ActOf(input, node);  // a copy: emitting may move the Builder's acts
  const Dims& out = geometry.out;
  // input is x of a deferred x * s, or the Conv's own input.
  if (!ConvFitsGemm(b, node, x, w.dims(), geometry)) return false;
  const std::int64_t out_channels = w.dims()[0], channels = x.dims[1], pixels = out[2] * out[3];
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = GemmEpilogueOf(chain, &sum);
  if (!epilogue) return false;

  // Weights [O][kh][kw][C] in panels of 16 output channels: oneDNN's Ohwi16o.
  const memory::desc panels(w.dims(), memory::data_type::f32, memory::format_tag::Ohwi16o);
  memory packed = b.PackedConstant(chain.anchor, "weights", panels,
                                   [&] { return b.HostView(PlainDesc(w.dims()), w.data().data()); });
  std::optional<memory> bias_mem = BiasMemory(b, chain.anchor, bias);
  const memory::desc dst_md = ChannelBlockedDesc(out, 8);
  const Arg src = b.UseAsIs(input, node);
  // The gate s of a deferred x * s: each channel is scaled as the rows are packed.
  const std::optional<Arg> scale =
      input != node.inputs[0] ? std::optional<Arg>(TakeChannelScale(b, node.inputs[0])) : std::nullopt;
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, dst_md, addend);
  GemmConvRows conv;
  conv.channels = channels, conv.in_h = x.dims[2], conv.in_w = x.dims[3], conv.out_w = out[3];
  conv.kernel_h = w.dims()[2], conv.kernel_w = w.dims()[3];
  conv.stride_h = geometry.strides[0], conv.stride_w = geometry.strides[1];
  conv.pad_top = geometry.pl[0], conv.pad_left = geometry.pl[1];
  EmitGemmStep(b, "conv", ChainLabel(b, chain), src, dst, packed, bias_mem, addend,
               {pixels, w.dims()[1] * w.dims()[2] * w.dims()[3], out_channels}, std::move(*epilogue), conv, scale);
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
