// Concat: one oneDNN concat primitive, or, fused, no copy at all where its
// readers allow:
//  - Concat -> BatchNormalization (-> Relu) in one pass (backend/lower/fused/concat_norm.cc);
//  - a Concat of two parts along channels read only by convolutions (group
//    1) and poolings is never materialized: each reader convolution runs once
//    per part with that part's slice of the weights, accumulated with the
//    `sum` post-op, since W * [a; b] = W_a * a + W_b * b (SqueezeNet's fire
//    modules feed their concatenated expand outputs to the next squeeze
//    conv); a pooling pools each part, and its output is deferred in turn.
#include "backend/lower/ops/concat.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ir/attributes.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/fused/concat_norm.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

std::optional<ChannelParts> ChannelPartsOf(const Builder& b, const Node& node) {
  ChannelParts parts;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
    ValueId v = node.inputs[i];
    if (!b.IsAct(v)) return std::nullopt;
    const Dims& d = b.ActOf(v, node).dims;
    std::int64_t axis = AttrInt(node, "axis", 0);
    if (axis < 0) axis += static_cast<std::int64_t>(d.size());
    if (axis != 1 || d.size() < 2) return std::nullopt;
    if (Product(d) == 0) continue;  // empty parts add nothing
    if (parts.out.empty()) parts.out = d, parts.out[1] = 0;
    Dims rest = d, rest_out = parts.out;
    rest[1] = rest_out[1] = 0;
    if (rest != rest_out) return std::nullopt;
    parts.out[1] += d[1];
    parts.values.push_back(v);
  }
  if (parts.values.empty()) return std::nullopt;
  return parts;
}

namespace {

// True when every reader of `v` is a group-1 Conv with constant weights
// taking it once, as its data input, or (with `pools`) a pooling.
bool ReadersTakeParts(const Builder& b, ValueId v, bool pools) {
  const Value& out = b.graph.value(v);
  if (out.is_graph_output || out.consumers.empty()) return false;
  for (NodeId c : out.consumers) {
    const Node& n = b.graph.node(c);
    if (!n.domain.empty() || b.absorbed[c] || n.inputs.empty() || n.inputs[0] != v) return false;
    if (!(pools && IsPooling(n.op_type)) && !ConvReadsAsData(b, n, v)) return false;
  }
  return true;
}

// A Concat along channels of two run-time 4-D parts in one layout, read only
// by group-1 Convs taking it as their data input and by poolings. Each reader
// then runs once per part: with more parts, the readers' extra runs cost
// more than the copy saved (GoogLeNet's four-branch inception concats, read
// by 1x1 Convs and a MaxPool: 9.0 -> 9.5 ms at 2 threads).
bool CanDefer(const Builder& b, const Node& node) {
  if (node.num_explicit_inputs != 2 || !ReadersTakeParts(b, node.outputs.at(0), true)) return false;
  std::optional<ChannelParts> parts = ChannelPartsOf(b, node);
  if (!parts || parts->values.size() != node.num_explicit_inputs || parts->out.size() != 4) return false;
  const std::string layout = LayoutString(b.ActOf(parts->values[0], node).md);
  for (ValueId v : parts->values) {
    const dnnl::memory::desc& md = b.ActOf(v, node).md;
    if (LayoutString(md) != layout || !(IsConvLayout(md) || IsPlainEquivalent(md))) return false;
  }
  return true;
}

void EmitConcatNow(Builder& b, const Node& node);
Act EmitConcatOf(Builder& b, const std::vector<Arg>& srcs, const Dims& out, std::int64_t axis, const std::string& label);

// The parts' buffers as concat sources.
std::vector<Arg> PartArgs(const std::vector<Act>& parts) {
  std::vector<Arg> srcs;
  for (const Act& part : parts) srcs.push_back(Arg{part.slot, part.md, {}});
  return srcs;
}

}  // namespace

void EmitConcat(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (b.fuse && TryConcatNorm(b, node)) return;
  if (b.fuse && CanDefer(b, node)) {
    const ChannelParts parts = *ChannelPartsOf(b, node);
    Builder::DeferredConcat deferred{node.name, {}, parts.out};
    for (ValueId v : parts.values) deferred.parts.push_back(b.ActOf(v, node));
    b.deferred_concats[node.outputs[0]] = std::move(deferred);
    return;
  }
  EmitConcatNow(b, node);
}

void EmitDeferredConcat(Builder& b, ValueId v) {
  const Builder::DeferredConcat deferred = b.deferred_concats.at(v);
  b.deferred_concats.erase(v);
  b.SetAct(v, EmitConcatOf(b, PartArgs(deferred.parts), deferred.out, 1, deferred.name));
}

void PoolConcatParts(Builder& b, const Node& node, const std::function<Act(const Act& part)>& pool) {
  const Builder::DeferredConcat concat = b.deferred_concats.at(node.inputs[0]);
  Builder::DeferredConcat pooled{concat.name + "+" + node.name, {}, {}};
  for (const Act& part : concat.parts) {
    pooled.parts.push_back(pool(part));
    if (pooled.out.empty()) pooled.out = pooled.parts.back().dims, pooled.out[1] = 0;
    pooled.out[1] += part.dims[1];
  }
  const ValueId out = node.outputs[0];
  if (ReadersTakeParts(b, out, false)) {
    b.deferred_concats[out] = std::move(pooled);
    return;
  }
  b.SetAct(out, EmitConcatOf(b, PartArgs(pooled.parts), pooled.out, 1, pooled.name));
}

bool EmitConvOverConcatParts(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  const Builder::DeferredConcat& deferred = b.deferred_concats.at(node.inputs[0]);
  for (const PostOp& po : chain.post_ops)
    if (po.kind != PostOp::Kind::kEltwise) return false;
  const Dims& x = deferred.out;
  const std::vector<Act>& parts = deferred.parts;
  Tensor w = b.Const(node.inputs.at(1), node);
  const ConvGeometry g = ConvGeometryOf(b, node, x, w.dims);
  const std::int64_t out_channels = w.dims[0], in_channels = w.dims[1];
  const std::int64_t taps = Product(Dims(w.dims.begin() + 2, w.dims.end()));
  std::vector<double> bias = BiasOf(b, node, 2, out_channels);
  eval::ScaleWeights(w.data, w.dims, eval::WeightLayout::kOutputMajor, 1, chain.affine.scale);
  eval::FoldIntoBias(bias, chain.affine);

  // One descriptor per part, all before anything is emitted: the first picks
  // the destination layout (the parts' own when a fast kernel takes it), the
  // others accumulate into it.
  using ConvPd = dnnl::convolution_forward::primitive_desc;
  std::vector<ConvPd> pds;
  std::vector<Tensor> slices;
  memory::desc dst_md = WithLayoutOf(parts[0].md, g.out);
  if (dst_md.is_zero()) dst_md = AnyDesc(g.out);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::int64_t c = parts[i].dims[1];
    Tensor slice;  // w[:, offset : offset + c, ...]
    slice.dims = w.dims;
    slice.dims[1] = c;
    for (std::int64_t o = 0; o < out_channels; ++o) {
      auto first = w.data.begin() + static_cast<std::ptrdiff_t>((o * in_channels + offset) * taps);
      slice.data.insert(slice.data.end(), first, first + static_cast<std::ptrdiff_t>(c * taps));
    }
    offset += c;
    const bool last = i + 1 == parts.size();
    dnnl::post_ops ops;
    if (i > 0) ops.append_sum(1.f);
    if (last)
      for (const PostOp& po : chain.post_ops) ops.append_eltwise(1.f, po.alg, po.alpha, po.beta);
    memory::desc wmd = AnyDesc(slice.dims);
    try {
      auto desc = last ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                          dnnl::algorithm::convolution_direct, parts[i].md, wmd,
                                                          PlainDesc({out_channels}), dst_md, g.strides, g.dil, g.pl, g.pr)
                       : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                          dnnl::algorithm::convolution_direct, parts[i].md, wmd, dst_md,
                                                          g.strides, g.dil, g.pl, g.pr);
      pds.emplace_back(desc, b.Attr(ops), b.engine);
    } catch (const dnnl::error&) {
      return false;
    }
    if (IsSlowImpl("conv", pds.back().impl_info_str())) return false;
    dst_md = pds.back().dst_desc();
    slices.push_back(std::move(slice));
  }

  Act dst = b.NewAct(g.out, dst_md);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const ConvPd& pd = pds[i];
    const Tensor& slice = slices[i];
    std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, Arg{parts[i].slot, parts[i].md, {}}}};
    memory weights = b.PackedConstant(chain.anchor, "weights:" + std::to_string(i), pd.weights_desc(),
                                      [&] { return b.HostView(PlainDesc(slice.dims), slice.data.data()); });
    args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
    if (i + 1 == parts.size()) {
      memory bias_mem = BiasMemory(b, chain.anchor, bias);
      args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
    }
    args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, dst.md, {}});
    b.Emit(pd, "conv", ChainLabel(b, chain) + " (" + deferred.name + " part " + std::to_string(i + 1) + "/" +
                           std::to_string(parts.size()) + ")",
           std::move(args), dst.md);
  }
  b.SetAct(chain.out, dst);
  return true;
}

namespace {

void EmitConcatNow(Builder& b, const Node& node) {
  std::vector<Arg> srcs;
  std::vector<ValueId> inputs;
  Dims out;
  std::int64_t axis = AttrInt(node, "axis", 0);
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
    ValueId v = node.inputs[i];
    Dims d = b.DimsOfValue(v, node);
    if (axis < 0) axis += static_cast<std::int64_t>(d.size());
    if (d.empty() || Product(d) == 0) continue;  // empty inputs add nothing
    Arg arg;
    if (b.IsConst(v)) {
      const Tensor& t = b.Const(v, node);
      if (t.elem_type != onnx::TensorProto::FLOAT) Unsupported(b, node, "integer tensors are not supported");
      arg.md = PlainDesc(t.dims);
      arg.fixed = b.HostMemory(arg.md, t.data.data());
    } else {
      arg = OpInput(b, node, i);
    }
    srcs.push_back(arg);
    inputs.push_back(v);
    if (out.empty()) out = d;
    else out[static_cast<std::size_t>(axis)] += d[static_cast<std::size_t>(axis)];
  }
  if (srcs.empty()) Unsupported(b, node, "all inputs are empty");
  // A channel-blocked part of a single block has the bytes of channels-last
  // (and oneDNN may describe it so): when some part is channel-blocked,
  // spell those with its bytes alike.
  std::int64_t block = 0;
  for (const Arg& a : srcs)
    if (!a.fixed && a.md.data.format_kind == dnnl_blocked && a.md.data.format_desc.blocking.inner_nblks > 0)
      block = std::max(block, ChannelBlockOf(a.md, a.md.dims()));
  for (Arg& a : srcs)
    if (block > 0 && !a.fixed && ChannelBlockOf(a.md, a.md.dims()) == block) a.md = ChannelBlockedDesc(a.md.dims(), block);
  // Sources in different layouts send oneDNN to its reference concat: make them all plain.
  bool mixed = false;
  for (const Arg& a : srcs) mixed |= LayoutString(a.md) != LayoutString(srcs[0].md);
  for (std::size_t i = 0; mixed && i < srcs.size(); ++i)
    if (!srcs[i].fixed) srcs[i] = b.UsePlain(inputs[i], node);
  try {
    b.SetAct(node.outputs[0], EmitConcatOf(b, srcs, out, axis, node.name));
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
}

// One copy of a concat as runs of whole bytes: `floats` floats from source
// `src` at float `from` to the destination at float `to`.
struct CopyRun {
  std::size_t src = 0;
  std::int64_t from = 0, to = 0, floats = 0;
};

// The concatenation as contiguous runs, when every source fills one run of
// the destination per index of the dims before `axis`: all plain, or all
// channel-blocked (nChw8c) along channels with every part but the last a
// whole number of blocks (GoogLeNet's inception branches: at batch 1, four
// copies). Runs are cut to at most kPiece floats, to share among threads.
// nullopt for other layouts.
std::optional<std::vector<CopyRun>> ContiguousRuns(const std::vector<Arg>& srcs, const memory::desc& dst,
                                                   const Dims& out, std::int64_t axis) {
  constexpr std::int64_t kPiece = 16384;  // 64 KiB
  std::vector<std::int64_t> run(srcs.size());  // floats per outer index, per source
  std::int64_t outer = 1;
  const std::int64_t block = ChannelBlockOf(dst, out);
  if (block > 0) {
    if (axis != 1) return std::nullopt;
    outer = out[0];
    for (std::size_t i = 0; i < srcs.size(); ++i) {
      const Dims dims = srcs[i].md.dims();
      if (ChannelBlockOf(srcs[i].md, dims) != block || (i + 1 < srcs.size() && dims[1] % block != 0))
        return std::nullopt;
      run[i] = static_cast<std::int64_t>(srcs[i].md.get_size() / sizeof(float)) / outer;
    }
  } else if (IsPlainEquivalent(dst) && dst.get_size() == Product(out) * sizeof(float)) {
    for (std::int64_t d = 0; d < axis; ++d) outer *= out[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < srcs.size(); ++i) {
      if (!IsPlainEquivalent(srcs[i].md)) return std::nullopt;
      run[i] = Product(srcs[i].md.dims()) / outer;
    }
  } else {
    return std::nullopt;
  }
  for (const Arg& a : srcs)
    if (a.md.data.data_type != dnnl_f32 || a.md.data.offset0 != 0) return std::nullopt;
  std::int64_t row = 0;  // destination floats per outer index
  for (std::int64_t r : run) row += r;
  if (row * outer * static_cast<std::int64_t>(sizeof(float)) != static_cast<std::int64_t>(dst.get_size()))
    return std::nullopt;
  std::vector<CopyRun> runs;
  for (std::int64_t o = 0; o < outer; ++o) {
    std::int64_t to = o * row;
    for (std::size_t i = 0; i < srcs.size(); to += run[i], ++i)
      for (std::int64_t first = 0; first < run[i]; first += kPiece)
        runs.push_back({i, o * run[i] + first, to + first, std::min(kPiece, run[i] - first)});
  }
  return runs;
}

// The concatenation of `srcs` (non-empty; in one layout, or all plain) along
// `axis`, dims `out`, into a new buffer. Throws dnnl::error when oneDNN has
// no implementation.
Act EmitConcatOf(Builder& b, const std::vector<Arg>& srcs, const Dims& out, std::int64_t axis, const std::string& label) {
  std::vector<memory::desc> mds;
  for (const Arg& a : srcs) mds.push_back(a.md);
  // Fused: the concat picks its destination layout from its sources'.
  dnnl::concat::primitive_desc pd =
      b.fuse ? dnnl::concat::primitive_desc(static_cast<int>(axis), mds, b.engine, b.Attr())
             : dnnl::concat::primitive_desc(PlainDesc(out), static_cast<int>(axis), mds, b.engine, b.Attr());
  // oneDNN 2.6 concatenates channels-last tensors along C with its reference
  // kernel: copy each source into its slice of the destination instead (one
  // jit reorder each, the same bytes moved).
  bool mixed = false;
  for (const Arg& a : srcs) mixed |= LayoutString(a.md) != LayoutString(srcs[0].md);
  memory::desc strided = WithLayoutOf(srcs[0].md, out);
  if (b.fuse && std::string(pd.impl_info_str()).rfind("ref", 0) == 0 && !mixed && !strided.is_zero()) {
    Act dst = b.NewAct(out, strided);
    Dims offsets(out.size(), 0);
    for (const Arg& src : srcs) {
      Dims dims = src.md.dims();
      Arg slice{dst.slot, strided.submemory_desc(dims, offsets), {}};
      dnnl::reorder::primitive_desc copy(b.engine, src.md, b.engine, slice.md, b.Attr());
      b.Emit(copy, "concat", label, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, slice}}, strided);
      offsets[static_cast<std::size_t>(axis)] += dims[static_cast<std::size_t>(axis)];
    }
    return dst;
  }
  // Otherwise its reference concat picks a destination layout of its own:
  // channel-blocked sources along a spatial axis gave acB16b (difftest seed
  // 37113456: [1,24,1] and [1,24,3] in aBc16b), which oneDNN 2.6's binary
  // with an eltwise post-op then computed wrong (zeros in channels 8-15). Make
  // the sources plain (one reorder each) and concatenate those instead.
  bool any_not_plain = false;
  for (const Arg& a : srcs) any_not_plain |= !IsPlainEquivalent(a.md);
  if (b.fuse && std::string(pd.impl_info_str()).rfind("ref", 0) == 0 && any_not_plain) {
    std::vector<Arg> plain;
    for (const Arg& src : srcs) {
      if (IsPlainEquivalent(src.md)) {
        plain.push_back(src);
        continue;
      }
      const Dims dims = src.md.dims();
      const Act p = b.EmitReorder(src, dims, PlainDesc(dims), label);
      plain.push_back(Arg{p.slot, p.md, {}});
    }
    return EmitConcatOf(b, plain, out, axis, label);
  }
  // oneDNN 2.6's simple concat takes 0.72 ms for GoogLeNet's inception3b
  // (480 channels at 28x28, nChw8c, one Zen 3 core); its four memcpy runs 0.1 ms.
  if (std::optional<std::vector<CopyRun>> runs = b.fuse ? ContiguousRuns(srcs, pd.dst_desc(), out, axis) : std::nullopt) {
    Act dst = b.NewAct(out, pd.dst_desc());
    std::vector<std::pair<int, Arg>> args;
    for (std::size_t i = 0; i < srcs.size(); ++i) args.emplace_back(static_cast<int>(i), srcs[i]);
    args.emplace_back(static_cast<int>(srcs.size()), Arg{dst.slot, dst.md, {}});
    b.EmitCustom(
        "concat", label, std::move(args),
        [runs = std::move(*runs), floats = Product(out)](const std::vector<void*>& data) {
          float* to = static_cast<float*>(data.back());
          const auto count = static_cast<std::int64_t>(runs.size());
          // A few KB are copied before a second thread would start: torch's
          // Concat of an LSTM's final states took 1.7 ms at 2 threads on a
          // loaded machine, waiting for the other core.
#pragma omp parallel for schedule(static) if (count > 1 && floats > (1 << 16))
          for (std::int64_t r = 0; r < count; ++r) {
            const CopyRun& run = runs[static_cast<std::size_t>(r)];
            std::memcpy(to + run.to, static_cast<const float*>(data[run.src]) + run.from,
                        static_cast<std::size_t>(run.floats) * sizeof(float));
          }
        },
        dst.md, "onnxfuse:concat_copy");
    return dst;
  }
  std::vector<std::pair<int, Arg>> args;
  for (std::size_t i = 0; i < srcs.size(); ++i) args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]);
  Act dst = b.NewAct(out, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, dst.md, {}});
  b.Emit(pd, "concat", label, std::move(args), dst.md);
  return dst;
}

}  // namespace

}  // namespace onnxfuse::backend
