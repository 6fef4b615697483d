// Gemm and MatMul chains: matmul primitives (or our own GEMM and GEMV on AVX2,
// backend/lower/own_kernels/own_gemm.cc) with the chain's folded BatchNormalization and post-ops.
#include "backend/lower/ops/matmul.h"

#include <functional>
#include <optional>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/fused/channel_scale.h"
#include "backend/lower/fused/any_shape_matmul.h"
#include "backend/lower/fused/int8_matmul.h"
#include "backend/kernels/gemm.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/own_kernels/own_kernels.h"
#include "backend/lower/core/unsupported.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

namespace {

using MatMulPd = dnnl::matmul::primitive_desc;

// The matmul `make(weights_md)` makes for constant 2-D weights [K, N],
// letting oneDNN choose their layout. Where it has no brgemm kernel (AVX2)
// its gemm keeps `any` weights row-major [K, N], and its sgemm reads them
// faster column-major ([N, K] row-major, as ONNX Gemm's transB = 1 stores
// them): on one core of an AVX2 Zen 3, ViT-B/16's [197, 768] x [768, 3072]
// takes 11-14 ms against 39-53 ms, [197, 768] x [768, 768] 3.3 against 3.7.
MatMulPd WithGemmWeights(const Dims& weights, const std::function<MatMulPd(const memory::desc&)>& make) {
  MatMulPd pd = make(AnyDesc(weights));
  if (!pd || weights.size() != 2 || !(pd.weights_desc() == PlainDesc(weights))) return pd;
  try {
    MatMulPd columns = make(memory::desc(weights, DataType::f32, Dims{1, weights[0]}));
    if (!IsSlowImpl("matmul", columns.impl_info_str())) return columns;
  } catch (const dnnl::error&) {
  }
  return pd;
}

// Gemm whose B or C is known only at run time (torch.mm of two activations,
// most ONNX node tests): Y = alpha * A' B' + beta * C (ONNX Operators.md,
// Gemm), A' = transA ? A^T : A, B' likewise, C unidirectionally broadcast to
// [M, N]. One matmul reads A and B in place, a transposed one through swapped
// strides, where oneDNN has a kernel that is not `ref:` for them; otherwise
// a reorder step makes the operand plain first. alpha and C become post-ops
// ahead of the chain's own: an eltwise_linear by alpha, then C added (a
// constant premultiplied by beta; a run-time C, when beta != 1, by scaling the
// product by alpha / beta, adding C, then scaling by beta).
void EmitGemmRuntime(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  Chain chain = chain_in;
  if (!chain.affine.scale.empty())
    throw Error(ErrorKind::kInternal,
                "internal error: " + NodeLabel(node) + ": a BatchNormalization folded into run-time weights");
  const Dims sa = b.DimsOfValue(node.inputs.at(0), node), sb = b.DimsOfValue(node.inputs.at(1), node);
  if (sa.size() != 2 || sb.size() != 2) Unsupported(b, node, "A and B must be 2-D");
  const bool trans_a = AttrInt(node, "transA", 0) != 0, trans_b = AttrInt(node, "transB", 0) != 0;
  const std::int64_t m = trans_a ? sa[1] : sa[0], k = trans_a ? sa[0] : sa[1], n = trans_b ? sb[0] : sb[1];
  if ((trans_b ? sb[1] : sb[0]) != k)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": K differs");
  const float alpha = AttrFloat(node, "alpha", 1.f), beta = AttrFloat(node, "beta", 1.f);
  const Dims out = {m, n};
  // A' and B' as views of the stored bytes: a transposed one by swapped strides.
  const memory::desc a_view = trans_a ? memory::desc({m, k}, DataType::f32, Dims{1, m}) : PlainDesc({m, k});
  const memory::desc b_view = trans_b ? memory::desc({k, n}, DataType::f32, Dims{1, k}) : PlainDesc({k, n});

  std::vector<PostOp> front;
  auto linear = [](float scale) {
    return PostOp{PostOp::Kind::kEltwise, dnnl::algorithm::eltwise_linear, scale, 0.f, kNoValue, {}, 0};
  };
  const bool has_c = node.inputs.size() > 2 && node.inputs[2] != kNoValue && beta != 0.f;
  if (has_c) {
    const ValueId c = node.inputs[2];
    const Dims cd = ExpandRank(b.DimsOfValue(c, node), 2);
    if (cd.size() > 2 || (cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != n))
      throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": C of shape " +
                                                DimsString(b.DimsOfValue(c, node)) + " does not broadcast to [M, N]");
    PostOp add{PostOp::Kind::kBinary, dnnl::algorithm::binary_add, 0.f, 0.f, kNoValue, {}, 0};
    if (b.IsConst(c)) {
      Tensor scaled = b.Const(c, node);
      if (scaled.elem_type != onnx::TensorProto::FLOAT) Unsupported(b, node, "C must be float32");
      for (float& v : scaled.data) v = static_cast<float>(static_cast<double>(v) * beta);
      scaled.dims = cd;
      if (alpha != 1.f) front.push_back(linear(alpha));
      add.constant = std::move(scaled);
      front.push_back(std::move(add));
    } else {
      add.operand = c;
      if (alpha / beta != 1.f) front.push_back(linear(alpha / beta));
      front.push_back(std::move(add));
      if (beta != 1.f) front.push_back(linear(beta));
    }
  } else if (alpha != 1.f) {
    front.push_back(linear(alpha));
  }
  chain.post_ops.insert(chain.post_ops.begin(), front.begin(), front.end());

  std::size_t count = 0;  // post-ops the matmul takes; the rest run after it (chain.h, "Splitting")
  auto make = [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
    if (!dst.is_zero()) return MatMulPd();  // plain destinations only
    if (trans_a || trans_b) {
      try {
        MatMulPd strided(dnnl::matmul::desc(a_view, b_view, PlainDesc(out)), attr, b.engine);
        if (!IsSlowImpl("matmul", strided.impl_info_str())) return strided;
      } catch (const dnnl::error&) {
      }
    }
    return MatMulPd(dnnl::matmul::desc(PlainDesc({m, k}), PlainDesc({k, n}), PlainDesc(out)), attr, b.engine);
  };
  MatMulPd pd = MakeChainPd<MatMulPd>(b, chain, out, "matmul", count, make);
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  const std::string label = ChainLabel(b, chain);
  const Arg src = RuntimeOperand(b, node.inputs[0], node, a_view, pd.src_desc(), label + " (A)");
  const Arg weights = RuntimeOperand(b, node.inputs[1], node, b_view, pd.weights_desc(), label + " (B)");
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, weights);
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot, weights.slot}, count);
}

}  // namespace

void EmitGemm(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  if (IsRuntimeInput(b, node, 1) || IsRuntimeInput(b, node, 2) || !b.IsAct(node.inputs.at(0)))
    return EmitGemmRuntime(b, chain_in);
  Chain chain = chain_in;
  const Dims stored_a = b.ActOf(node.inputs[0], node).dims;
  const Dims stored_w = b.ConstDims(node.inputs[1], node);
  if (stored_a.size() != 2 || stored_w.size() != 2) Unsupported(b, node, "A and B must be 2-D");
  // transA = 1: A is stored [K, M]; the product reads it as [M, K] through
  // swapped strides (a plain buffer, no copy).
  const bool trans_a = AttrInt(node, "transA", 0) != 0, trans_b = AttrInt(node, "transB", 0) != 0;
  const Dims a = trans_a ? Dims{stored_a[1], stored_a[0]} : stored_a;
  const memory::desc src_md = trans_a ? memory::desc(a, DataType::f32, Dims{1, a[0]}) : PlainDesc(a);
  const float alpha = AttrFloat(node, "alpha", 1.f), beta = AttrFloat(node, "beta", 1.f);
  const std::int64_t n = trans_b ? stored_w[0] : stored_w[1], k = trans_b ? stored_w[1] : stored_w[0];
  if (k != a[1]) throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": K differs");
  // C, unidirectionally broadcast to [M, N] (ONNX Gemm-13): one value per
  // output ([N], [1, N], a scalar) is the matmul's bias; any other shape
  // ([M, 1], [M, N]) is added as beta * C, scaled per output by a folded
  // BatchNormalization, by a binary post-op ahead of the chain's own.
  const Tensor* c = node.inputs.size() > 2 && node.inputs[2] != kNoValue ? &b.Const(node.inputs[2], node) : nullptr;
  const bool per_output = !c || c->NumElements() == 1 || (!c->dims.empty() && c->dims.back() == n && c->NumElements() == n);
  std::vector<double> bias = per_output ? BiasOf(b, node, 2, n, beta) : std::vector<double>(static_cast<std::size_t>(n), 0.0);
  if (!per_output) {
    const Dims cd = ExpandRank(c->dims, 2);
    if (c->dims.size() > 2 || (cd[0] != 1 && cd[0] != a[0]) || (cd[1] != 1 && cd[1] != n))
      throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": C of shape " +
                                                DimsString(c->dims) + " does not broadcast to [M, N]");
    Tensor added;
    added.dims = {a[0], n};
    for (std::int64_t i = 0; i < a[0] * n; ++i) {
      double v = beta * eval::ElementAt(*c, eval::BroadcastIndex(i, added.dims, c->dims));
      if (!chain.affine.scale.empty()) v *= chain.affine.scale[static_cast<std::size_t>(i % n)];
      added.data.push_back(static_cast<float>(v));
    }
    chain.post_ops.insert(chain.post_ops.begin(),
                          PostOp{PostOp::Kind::kBinary, dnnl::algorithm::binary_add, 0.f, 0.f, kNoValue, added, 0});
  }
  eval::FoldIntoBias(bias, chain.affine);
  // B as [N, K] (one row per output, as eval::ScaleWeights scales it), viewed
  // as the [K, N] operand of the product; alpha and a folded
  // BatchNormalization's scale applied. Made only when a packing needs it: a
  // schedule of the same node at another M replays the packed weights.
  std::optional<Tensor> prepared;
  auto weights_data = [&]() -> const float* {
    if (prepared) return prepared->data.data();
    const Tensor& w = b.Const(node.inputs[1], node);
    // Already [N, K] with nothing to scale (a PyTorch Linear's weight): read
    // where it is. A copy of a detector's box head (51 MB) would only add a
    // pass over it before the packing.
    if (trans_b && alpha == 1.f && chain.affine.scale.empty()) return w.data.data();
    Tensor t = w;
    if (!trans_b) {  // [K,N] -> [N,K]
      for (std::int64_t kk = 0; kk < k; ++kk)
        for (std::int64_t nn = 0; nn < n; ++nn)
          t.data[static_cast<std::size_t>(nn * k + kk)] = w.data[static_cast<std::size_t>(kk * n + nn)];
      t.dims = {n, k};
    }
    if (alpha != 1.f)
      for (auto& v : t.data) v *= alpha;
    eval::ScaleWeights(t.data, t.dims, eval::WeightLayout::kOutputMajor, 1, chain.affine.scale);
    prepared = std::move(t);
    return prepared->data.data();
  };

  const memory::desc weights_view({k, n}, DataType::f32, Dims{1, k});  // [N, K] data read as [K, N]
  if (!trans_a && EmitOwnGemm(b, chain, node.inputs[0], {a[0], n}, k, weights_view, weights_data, bias))
    return;

  // oneDNN's matmul, not inner_product: the same kernels family (brgemm), but
  // at 2 threads matmul splits [197, 768] x [768, 768] (ViT's attention
  // output projection) better: 0.55 against 0.69 ms; never slower at batch 1.
  const Dims out = {a[0], n}, weights_dims = {k, n};
  std::size_t count = 0;
  MatMulPd pd = MakeChainPd<MatMulPd>(b, chain, out, "matmul", count,
                                      [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
                                        if (!dst.is_zero()) return MatMulPd();
                                        return WithGemmWeights(weights_dims, [&](const memory::desc& weights_md) {
                                          return MatMulPd(dnnl::matmul::desc(src_md, weights_md, PlainDesc({1, n}),
                                                                             PlainDesc(out)),
                                                          attr, b.engine);
                                        });
                                      });
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  Arg src;
  if (trans_a) {
    src = b.UsePlain(node.inputs[0], node);
    src.md = src_md;
  } else {
    src = b.Use(node.inputs[0], pd.src_desc(), node);
  }
  memory weights = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                    [&] { return b.HostView(weights_view, weights_data()); });
  memory bias_mem = BiasMemory(b, chain.anchor, bias, true);
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  args.emplace_back(DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem});
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot}, count);
}

bool IsMatMulOfVector(const Builder& b, const Node& node) {
  // By the loader's shape inference: an operand may be a deferred product, neither constant nor activation yet.
  auto vector = [&](ValueId v) {
    const TensorType& t = b.graph.value(v).type;
    return t.has_shape && t.dims.size() == 1;
  };
  return node.op_type == "MatMul" && node.domain.empty() && (vector(node.inputs.at(0)) || vector(node.inputs.at(1)));
}

void EmitMatMulOfVector(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  // A deferred scalar factor of an operand scales the result (DeferScalarScale).
  float scale = 1.f;
  const ValueId in_a = TakeScalarScale(b, node.inputs.at(0), scale), in_b = TakeScalarScale(b, node.inputs.at(1), scale);
  const Dims a = b.DimsOfValue(in_a, node), w = b.DimsOfValue(in_b, node);
  if (a.empty() || w.empty()) Unsupported(b, node, "scalar MatMul operands are not allowed (ONNX MatMul)");
  // numpy.matmul: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; that dim leaves the result.
  const Dims a2 = a.size() == 1 ? Dims{1, a[0]} : a, w2 = w.size() == 1 ? Dims{w[0], 1} : w;
  const std::size_t rank = std::max(a2.size(), w2.size());
  const Dims ae = ExpandRank(a2, rank), we = ExpandRank(w2, rank);
  if (ae[rank - 1] != we[rank - 2])
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": K differs");
  Dims full;
  try {
    full = BroadcastDims(Dims(ae.begin(), ae.end() - 2), Dims(we.begin(), we.end() - 2));
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  Dims out = full;
  if (a.size() > 1) out.push_back(ae[rank - 2]);
  if (w.size() > 1) out.push_back(we[rank - 1]);
  full.push_back(ae[rank - 2]), full.push_back(we[rank - 1]);
  const Arg src = RuntimeOperand(b, in_a, node, PlainDesc(ae), PlainDesc(ae), node.name);
  const Arg weights = RuntimeOperand(b, in_b, node, PlainDesc(we), PlainDesc(we), node.name);
  const memory::desc dst_md = PlainDesc(full);
  dnnl::post_ops ops;
  if (scale != 1.f) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, scale, 0.f);
  auto pd = MakePd<MatMulPd>(b, node, dnnl::matmul::desc(src.md, weights.md, dst_md), b.Attr(ops));
  const Act dst = b.NewAct(out, PlainDesc(out));  // the same bytes as `full`
  b.Emit(pd, "matmul", node.name,
         {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, Arg{dst.slot, dst_md, {}}}}, dst_md);
  b.SetAct(node.outputs[0], dst);
}

void EmitMatMul(Builder& b, const Chain& chain_in) {
  const Node& node = b.graph.node(chain_in.anchor);
  // Operands A and B; a deferred scalar factor of either scales the result
  // first (an eltwise_linear post-op of the anchor itself).
  float scale = 1.f;
  const ValueId in_a = TakeScalarScale(b, node.inputs.at(0), scale), in_b = TakeScalarScale(b, node.inputs.at(1), scale);
  Chain chain = chain_in;
  if (scale != 1.f)
    chain.post_ops.insert(chain.post_ops.begin(),
                          PostOp{PostOp::Kind::kEltwise, dnnl::algorithm::eltwise_linear, scale, 0.f, kNoValue, {}, 0});
  Dims a = b.DimsOfValue(in_a, node), w = b.DimsOfValue(in_b, node);
  if (a.size() < 2 || w.size() < 2) Unsupported(b, node, "1-D MatMul operands are not supported");
  if (!b.IsAct(in_a)) Unsupported(b, node, "A must be computed at run time");
  std::size_t rank = std::max(a.size(), w.size());
  Dims ae = ExpandRank(a, rank), we = ExpandRank(w, rank), out;
  try {
    out = BroadcastDims(Dims(ae.begin(), ae.end() - 2), Dims(we.begin(), we.end() - 2));
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  if (ae[rank - 1] != we[rank - 2])
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": K differs");
  out.push_back(ae[rank - 2]), out.push_back(we[rank - 1]);

  const bool const_weights = b.IsConst(in_b);
  // Dynamic quantization's u8 A with its run-time zero point (dynamic_quantize.h):
  // an int8 matmul over constant integer weights (int8_matmul.h).
  const bool int8 = b.IsInt8Act(in_a) && b.AnyActOf(in_a, node).zero_point_slot >= 0;
  if (int8 && !const_weights)
    throw Error(ErrorKind::kInternal, "internal error: " + node.name + ": an int8 A without constant weights");
  if (int8 && EmitInt8MatMulAnyRows(b, chain, in_a, in_b, ae, we, out)) return;
  // Rows that vary between a session's shapes, on AVX-512: a matmul made once (any_shape_matmul.h).
  if (!int8 && const_weights && b.fuse && chain.affine.scale.empty() && !HaveGemm() &&
      EmitAnyRowsMatMul(b, chain, in_a, in_b, ae, we, out))
    return;
  // [B.., M, K] x constant [K, N]: one 2-D [B*M, K] x [K, N] product instead of
  // B products of M rows (vit's [197,1,768] x [768,2304] would be 197 GEMVs);
  // 2-D also lets oneDNN prepack the weights (it keeps 3-D weights plain).
  // Allowed when the post-ops only broadcast along the last axis (bias, eltwise).
  Chain collapsed = chain;
  bool collapse = const_weights && rank > 2 && Product(Dims(we.begin(), we.end() - 2)) == 1;
  for (PostOp& po : collapsed.post_ops) {
    if (po.kind != PostOp::Kind::kBinary) continue;  // eltwise; sum reads a plain view of its addend
    if (!po.constant || Product(po.constant->dims) != po.constant->dims.back()) collapse = false;
    else po.constant->dims = {1, po.constant->dims.back()};
  }
  if (collapse) ae = {Product(ae) / ae[rank - 1], ae[rank - 1]}, we = {we[rank - 2], we[rank - 1]};
  const Dims pd_out = collapse ? Dims{ae[0], we[1]} : out;
  // On AVX2: our own GEMM (backend/lower/own_kernels/own_gemm.cc).
  if (!int8 && const_weights && (rank == 2 || collapse) && chain.affine.scale.empty() &&
      EmitOwnGemm(b, chain, in_a, out, we[0], PlainDesc(we), [&] { return b.Const(in_b, node).data.data(); }, {}))
    return;
  // Fused: a run-time operand that is a strided view (a transpose) is read in
  // place when a fast kernel takes its strides; otherwise it is made plain.
  // operand_md: its descriptor either way, without taking it yet (a probe).
  auto operand_md = [&](ValueId v, const Dims& expanded, bool plain) {
    if (plain) return PlainDesc(expanded);
    const auto& md = b.ActOf(v, node).md;
    const auto& blk = md.data.format_desc.blocking;
    Dims strides(blk.strides, blk.strides + md.data.ndims);
    while (strides.size() < expanded.size()) strides.insert(strides.begin(), strides.front() * expanded[expanded.size() - strides.size()]);
    return memory::desc(expanded, DataType::f32, strides);
  };
  auto operand = [&](ValueId v, const Dims& expanded, bool plain) {
    Arg arg = plain ? b.UsePlain(v, node) : b.UseAsIs(v, node);
    arg.md = operand_md(v, expanded, plain);
    return arg;
  };
  auto strided = [&](ValueId v) {
    const auto& md = b.ActOf(v, node).md;
    return b.fuse && md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks == 0 &&
           !IsPlainEquivalent(md);
  };
  auto matmul_pd = [&](const memory::desc& src_md, const memory::desc& weights_md, const dnnl::primitive_attr& attr) {
    auto make = [&](const memory::desc& md) {
      return MatMulPd(dnnl::matmul::desc(src_md, md, PlainDesc(pd_out)), attr, b.engine);
    };
    if (int8)
      return MatMulPd(dnnl::matmul::desc(PlainDesc(ae, DataType::u8), memory::desc(we, DataType::s8, memory::format_tag::any),
                                         PlainDesc(pd_out)),
                      WithRunTimeSrcZeroPoint(attr), b.engine);
    return const_weights ? WithGemmWeights(we, make) : make(weights_md);
  };
  if (b.fuse && !int8 && !const_weights) {
    // Dims that change between the shapes a session compiles: a matmul made once.
    const memory::desc a_md = operand_md(in_a, ae, !strided(in_a)), b_md = operand_md(in_b, we, !strided(in_b));
    if (std::optional<AnyShapeMatMul> any = AnyShapeMatMulPd(b, chain, in_a, in_b, a_md, b_md, out)) {
      const Arg src = operand(in_a, ae, !strided(in_a)), weights = operand(in_b, we, !strided(in_b));
      std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
      FinishChain(b, chain, any->pd, "matmul", out, std::move(args), {src.slot, weights.slot}, any->count);
      return;
    }
  }
  const bool try_strided = !int8 && !collapse && (strided(in_a) || (!const_weights && strided(in_b)));
  std::size_t count = 0;  // post-ops the matmul takes; the rest run after it (chain.h, "Splitting")
  auto make = [&](const dnnl::primitive_attr& attr, const memory::desc& dst) {
    if (!dst.is_zero()) return MatMulPd();  // plain destinations only
    if (try_strided) {
      try {
        const memory::desc weights_md =
            const_weights ? memory::desc() : operand_md(in_b, we, !strided(in_b));
        MatMulPd kept = matmul_pd(operand_md(in_a, ae, !strided(in_a)), weights_md, attr);
        std::string impl = kept.impl_info_str();
        // A product of two run-time operands (attention's Q K^T and P V) may
        // run on gemm: it reads the transposed views in place, where brg
        // needs a copy first (ViT-B/16 at 2 threads: 4.0 -> 2.7 ms per
        // inference for those products with their reorders).
        if (impl.rfind("ref", 0) != 0 && (!const_weights || impl.find("gemm") == std::string::npos)) return kept;
      } catch (const dnnl::error&) {
      }
    }
    return matmul_pd(PlainDesc(ae), const_weights ? memory::desc() : PlainDesc(we), attr);
  };
  MatMulPd pd = MakeChainPd<MatMulPd>(b, chain, out, collapse ? collapsed : chain, pd_out, "matmul", count, make);
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, collapse ? collapsed : chain, pd_out, args, count);
  // The operands as the chosen descriptor reads them (in place only if it took the strided view).
  auto in_place = [&](ValueId v, const Dims& expanded, const memory::desc& md) {
    return try_strided && strided(v) && md == operand_md(v, expanded, false);
  };
  if (int8) {  // the u8 bytes as they lie (plain), their zero point, the s8 weights packed once
    const std::vector<int> read = BindInt8MatMul(b, chain, pd, in_a, in_b, ae, we, args);
    FinishChain(b, chain, pd, "matmul", out, std::move(args), read, count);
    return;
  }
  Arg src = operand(in_a, ae, !in_place(in_a, ae, pd.src_desc())), weights;
  if (!const_weights) weights = operand(in_b, we, !in_place(in_b, we, pd.weights_desc()));
  if (const_weights) {
    memory m = b.PackedConstant(chain.anchor, "weights", pd.weights_desc(),
                                [&] { return b.HostView(PlainDesc(we), b.Const(in_b, node).data.data()); });
    weights = Arg{-1, m.get_desc(), m};
  }
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, weights);
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot, weights.slot}, count);
}

}  // namespace onnxfuse::backend
