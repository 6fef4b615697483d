// An inverted residual block as one step of our depth-first kernel.
#include "backend/lower/fused/inverted_residual.h"

#include <omp.h>

#include <optional>
#include <string>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/inverted_residual.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/graph_queries.h"
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
// each member reads the one before it (x * HardSigmoid(x)'s and x *
// Sigmoid(x)'s Mul read both),
// every other input is known at build time, and no value but the last leaves
// it (no graph output, no reader outside). Checked before any member is
// attached, because attaching consumes their uses (chain.h).
bool WholeChain(const Builder& b, const Members& m, std::size_t first, std::size_t end) {
  for (std::size_t i = first + 1; i < end; ++i) {
    const Node& n = *m[i];
    const ValueId prev = m[i - 1]->outputs.at(0);
    const bool gated_mul = n.op_type == "Mul" && (m[i - 1]->op_type == "HardSigmoid" || m[i - 1]->op_type == "Sigmoid");
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
// BatchNormalization and post-ops (a HardSigmoid or Sigmoid takes its Mul with it).
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
  if (convs.size() < 2 || convs.size() > 3 || convs[0] != 0) return false;
  const bool projects = convs.size() == 3;  // else PwDwConv*: expand and depthwise only
  const Node &expand = *m[convs[0]], &depthwise = *m[convs[1]];
  const ValueId input = expand.inputs.at(0);
  if (!b.IsAct(input) || ScaledInput(b, input) != input || b.deferred_concats.count(input)) return false;
  for (std::size_t c : convs)
    if (!ConstFloatOperands(b, *m[c])) return false;
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
  const Dims out = projects ? PointwiseOut(b, *m[convs[2]], g.out) : g.out;
  if (out.empty()) return false;
  if (!UseInvertedResidual(x[2], x[3], e[1], L2CacheBytes())) return false;
  // The residual: the block's input itself, of the output's shape.
  const Node& last = *m.back();
  if (last.op_type == "Add") {
    const ValueId projected = m[m.size() - 2]->outputs.at(0);  // the project Conv's BatchNormalization
    const ValueId r = last.inputs.at(0) == projected ? last.inputs.at(1) : last.inputs.at(0);
    const Value& p = b.graph.value(projected);
    if (!projects || r != input || out != x || p.is_graph_output || p.consumers.size() != 1) return false;
  }
  // The rest of each chain; the Add reads the input besides its chain.
  const std::size_t end2 = projects ? convs[2] : m.size();
  if (!WholeChain(b, m, convs[0], convs[1]) || !WholeChain(b, m, convs[1], end2) ||
      (projects && !WholeChain(b, m, convs[2], last.op_type == "Add" ? m.size() - 1 : m.size())))
    return false;

  // The chains and their epilogues: the pattern's activations are all the kernel's.
  std::vector<NodeId> group;
  for (const Node* n : m) group.push_back(IdOf(b, n));
  std::vector<Chain> chains = {ChainOf(b, m, convs[0], convs[1], group), ChainOf(b, m, convs[1], end2, group)};
  if (projects) chains.push_back(ChainOf(b, m, convs[2], m.size(), group));
  std::vector<PointwiseOp> epilogues[3];
  for (std::size_t i = 0; i < chains.size(); ++i) {
    const PostOp* sum = nullptr;
    auto ep = EpilogueOf(chains[i], &sum);
    if (!ep || (sum && (i < 2 || sum->operand != input)))
      throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(expand) +
                                            ": an inverted residual block's activations are not the kernel's");
    epilogues[i] = std::move(*ep);
  }

  InvertedResidualShape s;
  s.in_h = x[2], s.in_w = x[3], s.in_channels = x[1], s.expanded = e[1];
  s.kernel = wd[2], s.stride = g.strides[0], s.pad_top = g.pl[0], s.pad_left = g.pl[1];
  s.out_h = out[2], s.out_w = out[3], s.out_channels = projects ? out[1] : 0;
  const InvertedResidualEpilogues epilogue{epilogues[0], epilogues[1], epilogues[2]};

  const memory::desc packed_md = PlainDesc({InvertedResidualPackedFloats(s)});
  memory packed = b.PackedConstant(chains[0].anchor, "inverted residual", packed_md, [&] {
    std::vector<std::vector<float>> weights, biases;
    for (const Chain& chain : chains) {
      ConvWeights w(b, chain);
      weights.push_back(w.data());
      const Node& conv = b.graph.node(chain.anchor);
      std::vector<double> bias = BiasOf(b, conv, 2, w.dims()[0]);
      eval::FoldIntoBias(bias, chain.affine);
      biases.emplace_back(bias.begin(), bias.end());
    }
    std::vector<float> data(static_cast<std::size_t>(InvertedResidualPackedFloats(s)));
    PackInvertedResidual(s, weights[0].data(), biases[0].data(), weights[1].data(), biases[1].data(),
                         projects ? weights[2].data() : nullptr, projects ? biases[2].data() : nullptr, data.data());
    return b.HostMemory(packed_md, data.data());
  });

  // Without the projection, squeeze-and-excitation's GlobalAveragePool of the
  // result is taken as the rows are made.
  const Node* pool = projects ? nullptr : PoolReading(b, chains.back().out);
  const std::int64_t tile_rows = InvertedResidualTileRows(s, L2CacheBytes());
  const std::int64_t scratch_bytes = InvertedResidualScratchBytes(s, tile_rows) * omp_get_max_threads();
  const Arg src = b.Use(input, ChannelsLastDesc(x), expand);
  const memory::desc dst_md = ChannelsLastDesc(out);
  const Act dst = b.NewAct(out, dst_md);
  std::vector<std::pair<int, Arg>> args = {
      {0, src}, {1, Arg{dst.slot, dst_md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  std::optional<Act> pooled;
  if (pool) {
    const Dims pooled_dims = {1, s.expanded, 1, 1};
    pooled = b.NewAct(pooled_dims, PlainDesc(pooled_dims));
    args.push_back({3, Arg{pooled->slot, pooled->md, {}}});
  }
  std::string label;
  for (const Chain& chain : chains) label += (label.empty() ? "" : "+") + ChainLabel(b, chain);
  if (pool) label += "+" + pool->name;
  b.EmitCustom(
      "conv", label, std::move(args),
      [s, epilogue, tile_rows, scratch_bytes, means = pool != nullptr](const std::vector<void*>& data) {
        InvertedResidual(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]),
                         static_cast<float*>(data[1]), s, epilogue, tile_rows, static_cast<float*>(data.back()),
                         scratch_bytes, means ? static_cast<float*>(data[3]) : nullptr);
      },
      dst_md, "onnxfuse:inverted_residual", scratch_bytes);
  double flops = ConvFlops(Product(e), s.expanded, Product(b.DimsOfValue(expand.inputs[1], expand))) +
                 ConvFlops(Product(g.out), s.expanded, Product(wd));
  if (projects) {
    const Node& project = *m[convs[2]];
    flops += ConvFlops(Product(out), s.out_channels, Product(b.DimsOfValue(project.inputs[1], project)));
  }
  b.steps.back().flops = flops;
  Absorb(b, m);
  b.SetAct(chains.back().out, dst);
  if (pool) {
    Absorb(b, {pool});
    b.SetAct(pool->outputs[0], *pooled);
  }
  return true;
}

}  // namespace onnxfuse::backend
