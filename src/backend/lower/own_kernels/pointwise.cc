// A 1x1 convolution on a small channels-last map as our own GEMM
// (backend/kernels/pointwise.h), when its weights outweigh its activations.
#include "backend/lower/own_kernels/own_kernels.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "backend/lower/core/chain.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/operands.h"
#include "backend/kernels/pointwise.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;
using Kind = PostOp::Kind;

// At most this many output pixels (a 14x14 map at batch 1): beyond, each
// weight is reused over enough rows that oneDNN's kernel no longer waits on
// memory, and it stays.
constexpr std::int64_t kMaxRows = 256;

// A PointwiseConv prefetches the next one's first panel when at most this
// many steps apart (expand, depthwise, project: 2): further, the steps
// between would evict it from L2 again.
constexpr std::size_t kMaxPrefetchDistance = 2;

// oihw [out, in, 1, 1] blocked by kPointwisePanel output channels: block p
// holds [in][64] (oneDNN's blocking descriptor: inner block 64 on dim 0).
memory::desc PanelDesc(std::int64_t out, std::int64_t in) {
  memory::desc md(Dims{out, in, 1, 1}, memory::data_type::f32, Dims{in * kPointwisePanel, kPointwisePanel, 1, 1});
  dnnl_memory_desc_t& d = md.data;
  d.padded_dims[0] = (out + kPointwisePanel - 1) / kPointwisePanel * kPointwisePanel;
  d.format_desc.blocking.inner_nblks = 1;
  d.format_desc.blocking.inner_blks[0] = kPointwisePanel;
  d.format_desc.blocking.inner_idxs[0] = 0;
  d.format_desc.blocking.strides[2] = d.format_desc.blocking.strides[3] = in * kPointwisePanel;
  return md;
}

}  // namespace

std::optional<std::vector<PointwiseOp>> EpilogueOf(const Chain& chain, const PostOp** sum) {
  std::vector<PointwiseOp> ops;
  for (const PostOp& po : chain.post_ops) {
    PointwiseOp op;
    if (po.kind == Kind::kSum) {
      op.kind = PointwiseOp::Kind::kAdd;
      *sum = &po;
    } else if (po.kind != Kind::kEltwise) {
      return std::nullopt;
    } else if (po.alg == dnnl::algorithm::eltwise_relu && po.alpha == 0) {
      op = {PointwiseOp::Kind::kClamp, 0.0f, std::numeric_limits<float>::infinity()};
    } else if (po.alg == dnnl::algorithm::eltwise_clip) {
      op = {PointwiseOp::Kind::kClamp, po.alpha, po.beta};
    } else if (po.alg == dnnl::algorithm::eltwise_linear) {
      op = {PointwiseOp::Kind::kLinear, po.alpha, po.beta};
    } else if (po.alg == dnnl::algorithm::eltwise_hardswish) {
      op = {PointwiseOp::Kind::kHardSwish, po.alpha, po.beta};
    } else if (po.alg == dnnl::algorithm::eltwise_swish && po.alpha == 1.f) {
      op = {PointwiseOp::Kind::kSwish, 0.0f, 0.0f};
    } else {
      return std::nullopt;
    }
    ops.push_back(op);
  }
  return ops;
}

Act ResidualDestination(Builder& b, const Node& node, const PostOp* sum, const Arg& src, const Dims& out,
                        const memory::desc& dst_md, std::optional<Arg>& addend) {
  if (!sum) return b.NewAct(out, dst_md);
  addend = b.Use(sum->operand, dst_md, node);
  return b.DeadNow(addend->slot) && addend->slot != src.slot ? Act{addend->slot, dst_md, out} : b.NewAct(out, dst_md);
}

bool EmitPointwise(Builder& b, const Chain& chain, ValueId input, ConvWeights& w, const std::vector<double>& bias,
                   const ConvGeometry& geometry) {
  const Node& node = b.graph.node(chain.anchor);
  const Dims x = b.ActOf(input, node).dims, &out = geometry.out;
  if (!b.fuse || !HavePointwiseConv() || x.size() != 4 || input != node.inputs[0]) return false;
  const std::int64_t out_channels = w.dims()[0], in_channels = x[1];
  auto all = [](const Dims& d, std::int64_t v) { return std::all_of(d.begin(), d.end(), [v](auto e) { return e == v; }); };
  if (AttrInt(node, "group", 1) != 1 || w.dims()[2] != 1 || w.dims()[3] != 1 || out_channels % 16 != 0) return false;
  if (!all(geometry.strides, 1) || !all(geometry.pl, 0) || !all(geometry.pr, 0)) return false;
  const std::int64_t rows = x[0] * x[2] * x[3];
  if (rows > kMaxRows || !SameBytes(b.ActOf(input, node).md, ChannelsLastDesc(x))) return false;
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = EpilogueOf(chain, &sum);
  if (!epilogue) return false;

  memory weights = b.PackedConstant(chain.anchor, "weights", PanelDesc(out_channels, in_channels),
                                    [&] { return b.HostView(PlainDesc(w.dims()), w.data().data()); });
  memory bias_mem = BiasMemory(b, chain.anchor, bias);
  const memory::desc dst_md = ChannelsLastDesc(out);
  Arg src = b.Use(input, ChannelsLastDesc(x), node);
  // Arguments: x, y, weights, bias, and the residual (read by kAdd) if any.
  std::optional<Arg> addend;
  const Act dst = ResidualDestination(b, node, sum, src, out, dst_md, addend);
  std::vector<std::pair<int, Arg>> args = {{0, src},
                                           {1, Arg{dst.slot, dst_md, {}}},
                                           {2, Arg{-1, weights.get_desc(), weights}},
                                           {3, Arg{-1, bias_mem.get_desc(), bias_mem}}};
  if (addend) args.push_back({4, *addend});
  const PointwiseShape shape{rows, in_channels, out_channels};
  auto next = std::make_shared<PointwiseNext>();  // set by LinkPointwise
  b.EmitCustom(
      "conv", ChainLabel(b, chain), std::move(args),
      [shape, ops = *epilogue, next](const std::vector<void*>& data) {
        PointwiseConv(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]),
                      static_cast<const float*>(data[3]), data.size() > 4 ? static_cast<const float*>(data[4]) : nullptr,
                      static_cast<float*>(data[1]), shape, ops, *next);
      },
      dst_md, "onnxfuse:pointwise");
  b.steps.back().flops = 2.0 * static_cast<double>(rows) * static_cast<double>(in_channels) *
                         static_cast<double>(out_channels);
  b.pointwise_steps.push_back(
      {b.steps.size() - 1, {static_cast<const float*>(weights.get_data_handle()), in_channels}, next});
  b.SetAct(chain.out, dst);
  return true;
}

void LinkPointwise(Builder& b) {
  auto& list = b.pointwise_steps;
  for (std::size_t i = 0; i + 1 < list.size(); ++i)
    if (list[i + 1].step - list[i].step <= kMaxPrefetchDistance) *list[i].next = list[i + 1].first_panel;
}

}  // namespace onnxfuse::backend
