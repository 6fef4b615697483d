// An inverted residual block as one step of our depth-first kernel.
#include "backend/lower/fused/inverted_residual.h"

#include <omp.h>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/inverted_residual.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/fused/channel_scale.h"
#include "backend/lower/own_kernels/own_kernels.h"
#include "eval/batch_norm_affine.h"
#include "onnxfuse/error.h"
#include "ir/attributes.h"
#include "ir/node_label.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;
using Members = std::vector<const Node*>;

NodeId IdOf(const Builder& b, const Node* n) { return static_cast<NodeId>(n - b.graph.nodes().data()); }

// Whether m[first, end) is one chain a convolution's lowering takes whole:
// each member reads the one before it (x * HardSigmoid(x)'s Mul reads both),
// every other input is known at build time, and no value but the last leaves
// it (no graph output, no reader outside). Checked before any member is
// attached, because attaching consumes their uses (chain.h).
bool WholeChain(const Builder& b, const Members& m, std::size_t first, std::size_t end) {
  for (std::size_t i = first + 1; i < end; ++i) {
    const Node& n = *m[i];
    const ValueId prev = m[i - 1]->outputs.at(0);
    const bool gated_mul = n.op_type == "Mul" && m[i - 1]->op_type == "HardSigmoid";
    for (std::size_t j = 0; j < n.inputs.size(); ++j) {
      const ValueId v = n.inputs[j];
      const bool chained = j == 0 ? v == prev || (gated_mul && v == m[i - 2]->outputs.at(0))
                                  : gated_mul && (v == prev || v == m[i - 2]->outputs.at(0));
      if (!chained && v != kNoValue && !b.IsConst(v)) return false;
      if (j == 0 && !chained) return false;
    }
  }
  for (std::size_t i = first; i + 1 < end; ++i) {
    const Value& v = b.graph.value(m[i]->outputs.at(0));
    if (v.is_graph_output) return false;
    for (NodeId reader : v.consumers) {
      bool inside = false;
      for (std::size_t j = i + 1; j < end; ++j) inside = inside || &b.graph.node(reader) == m[j];
      if (!inside) return false;
    }
  }
  return true;
}

// The chain anchored at m[first] that takes m[first + 1, end) as its
// BatchNormalization and post-ops (a HardSigmoid takes its Mul with it).
// WholeChain holds, so each member attaches; one that does not is a bug.
Chain ChainOf(Builder& b, const Members& m, std::size_t first, std::size_t end, const std::vector<NodeId>& group) {
  const NodeId anchor = IdOf(b, m[first]);
  Chain chain{anchor, m[first]->outputs.at(0), {anchor}, {}, {}, kNoNode};
  for (std::size_t i = first + 1; i < end; ++i) {
    const NodeId id = IdOf(b, m[i]);
    if (b.absorbed[id]) continue;
    if (!Attach(b, chain, id, group, nullptr))
      throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(*m[i]) +
                                            ": an inverted residual block's member does not attach to its chain");
  }
  return chain;
}

// Weights and bias known at build time, in float.
bool ConstFloatOperands(Builder& b, const Node& conv) {
  for (std::size_t i = 1; i < conv.inputs.size() && i < 3; ++i) {
    const ValueId v = conv.inputs[i];
    if (v == kNoValue) continue;
    if (!b.IsConst(v) || b.Const(v, conv).elem_type != onnx::TensorProto::FLOAT) return false;
  }
  return conv.inputs.size() > 1 && conv.inputs[1] != kNoValue;
}

bool AllZero(const Dims& d) {
  for (auto v : d)
    if (v != 0) return false;
  return true;
}

// A 1x1, stride-1, unpadded, group-1 Conv of `x` with weights [out, x[1], 1, 1]; its output dims, else empty.
Dims PointwiseOut(Builder& b, const Node& conv, const Dims& x) {
  const Dims w = b.DimsOfValue(conv.inputs[1], conv);
  if (AttrInt(conv, "group", 1) != 1 || w.size() != 4 || w[1] != x[1] || w[2] != 1 || w[3] != 1) return {};
  const ConvGeometry g = ConvGeometryOf(b, conv, x, w);
  if (g.strides != Dims{1, 1} || !AllZero(g.dil) || !AllZero(g.pl) || !AllZero(g.pr)) return {};
  return g.out;
}

}  // namespace

bool UseInvertedResidual(std::int64_t in_h, std::int64_t in_w, std::int64_t expanded, std::int64_t l2_bytes) {
  return in_h * in_w * expanded * static_cast<std::int64_t>(sizeof(float)) > l2_bytes;
}

bool LowerInvertedResidual(Builder& b, const Members& m) {
  if (!b.fuse || CpuIsa() == Isa::kScalar) return false;
  std::vector<std::size_t> convs;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]->op_type == "Conv") convs.push_back(i);
  if (convs.size() != 3 || convs[0] != 0) return false;
  const Node &expand = *m[convs[0]], &depthwise = *m[convs[1]], &project = *m[convs[2]];
  const ValueId input = expand.inputs.at(0);
  if (!b.IsAct(input) || ScaledInput(b, input) != input || b.deferred_concats.count(input)) return false;
  for (const Node* conv : {&expand, &depthwise, &project})
    if (!ConstFloatOperands(b, *conv)) return false;
  const Dims x = b.ActOf(input, expand).dims;
  if (x.size() != 4 || x[0] != 1) return false;

  // Geometry: 1x1 expand, square depthwise with one stride, 1x1 project.
  const Dims e = PointwiseOut(b, expand, x);
  if (e.empty()) return false;
  const Dims wd = b.DimsOfValue(depthwise.inputs[1], depthwise);
  if (wd.size() != 4 || wd[0] != e[1] || wd[1] != 1 || wd[2] != wd[3] || AttrInt(depthwise, "group", 1) != e[1])
    return false;
  const ConvGeometry g = ConvGeometryOf(b, depthwise, e, wd);
  if (g.strides.size() != 2 || g.strides[0] != g.strides[1] || !AllZero(g.dil)) return false;
  const Dims out = PointwiseOut(b, project, g.out);
  if (out.empty()) return false;
  if (!UseInvertedResidual(x[2], x[3], e[1], L2CacheBytes())) return false;
  // The residual: the block's input itself, of the output's shape.
  const Node& last = *m.back();
  if (last.op_type == "Add") {
    const ValueId projected = m[m.size() - 2]->outputs.at(0);  // the project Conv's BatchNormalization
    const ValueId r = last.inputs.at(0) == projected ? last.inputs.at(1) : last.inputs.at(0);
    const Value& p = b.graph.value(projected);
    if (r != input || out != x || p.is_graph_output || p.consumers.size() != 1) return false;
  }
  // The rest of each chain; the Add reads the input besides its chain.
  if (!WholeChain(b, m, convs[0], convs[1]) || !WholeChain(b, m, convs[1], convs[2]) ||
      !WholeChain(b, m, convs[2], last.op_type == "Add" ? m.size() - 1 : m.size()))
    return false;

  // The three chains and their epilogues: the pattern's activations are all the kernel's.
  std::vector<NodeId> group;
  for (const Node* n : m) group.push_back(IdOf(b, n));
  const Chain c1 = ChainOf(b, m, convs[0], convs[1], group);
  const Chain c2 = ChainOf(b, m, convs[1], convs[2], group);
  const Chain c3 = ChainOf(b, m, convs[2], m.size(), group);
  const PostOp *sum1 = nullptr, *sum2 = nullptr, *sum3 = nullptr;
  auto ep1 = EpilogueOf(c1, &sum1), ep2 = EpilogueOf(c2, &sum2), ep3 = EpilogueOf(c3, &sum3);
  if (!ep1 || !ep2 || !ep3 || sum1 || sum2 || (sum3 && sum3->operand != input))
    throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(expand) +
                                          ": an inverted residual block's activations are not the kernel's");

  InvertedResidualShape s;
  s.in_h = x[2], s.in_w = x[3], s.in_channels = x[1], s.expanded = e[1];
  s.kernel = wd[2], s.stride = g.strides[0], s.pad_top = g.pl[0], s.pad_left = g.pl[1];
  s.out_h = out[2], s.out_w = out[3], s.out_channels = out[1];
  const InvertedResidualEpilogues epilogues{*ep1, *ep2, *ep3};

  const memory::desc packed_md = PlainDesc({InvertedResidualPackedFloats(s)});
  memory packed = b.PackedConstant(c1.anchor, "inverted residual", packed_md, [&] {
    ConvWeights w1(b, c1), w2(b, c2), w3(b, c3);
    std::vector<float> biases[3];
    const Chain* chains[3] = {&c1, &c2, &c3};
    for (int i = 0; i < 3; ++i) {
      const Node& conv = b.graph.node(chains[i]->anchor);
      std::vector<double> bias = BiasOf(b, conv, 2, b.DimsOfValue(conv.inputs[1], conv)[0]);
      eval::FoldIntoBias(bias, chains[i]->affine);
      biases[i].assign(bias.begin(), bias.end());
    }
    std::vector<float> data(static_cast<std::size_t>(InvertedResidualPackedFloats(s)));
    PackInvertedResidual(s, w1.data().data(), biases[0].data(), w2.data().data(), biases[1].data(),
                         w3.data().data(), biases[2].data(), data.data());
    return b.HostMemory(packed_md, data.data());
  });

  const std::int64_t tile_rows = InvertedResidualTileRows(s, L2CacheBytes());
  const std::int64_t scratch_bytes = InvertedResidualScratchBytes(s, tile_rows) * omp_get_max_threads();
  const Arg src = b.Use(input, ChannelsLastDesc(x), expand);
  const memory::desc dst_md = ChannelsLastDesc(out);
  const Act dst = b.NewAct(out, dst_md);
  std::vector<std::pair<int, Arg>> args = {
      {0, src}, {1, Arg{dst.slot, dst_md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  b.EmitCustom(
      "conv", ChainLabel(b, c1) + "+" + ChainLabel(b, c2) + "+" + ChainLabel(b, c3), std::move(args),
      [s, epilogues, tile_rows, scratch_bytes](const std::vector<void*>& data) {
        InvertedResidual(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]),
                         static_cast<float*>(data[1]), s, epilogues, tile_rows, static_cast<float*>(data.back()),
                         scratch_bytes);
      },
      dst_md, "onnxfuse:inverted_residual", scratch_bytes);
  b.steps.back().flops = ConvFlops(Product(e), s.expanded, Product(b.DimsOfValue(expand.inputs[1], expand))) +
                         ConvFlops(Product(g.out), s.expanded, Product(wd)) +
                         ConvFlops(Product(out), s.out_channels, Product(b.DimsOfValue(project.inputs[1], project)));
  Absorb(b, m);
  b.SetAct(c3.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
