// A product whose dims vary between compiled shapes, as one matmul with
// run-time dims (any_shape_matmul.h).
#include "backend/lower/fused/any_shape_matmul.h"

#include <algorithm>

namespace onnxfuse::backend {

namespace {

// `flags` (of a value of lower rank, numpy-aligned to the right) at `rank`.
std::vector<bool> AtRank(std::vector<bool> flags, std::size_t rank) {
  while (flags.size() < rank) flags.insert(flags.begin(), false);
  return flags;
}

}  // namespace

dnnl::memory::desc WithRunTimeDims(const dnnl::memory::desc& md, const std::vector<bool>& varying) {
  if (std::find(varying.begin(), varying.end(), true) == varying.end()) return md;
  Dims dims = md.dims();
  const auto& blocking = md.data.format_desc.blocking;
  Dims strides(blocking.strides, blocking.strides + md.data.ndims);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (varying[i]) dims[i] = DNNL_RUNTIME_DIM_VAL;
    if (strides[i] != 1) strides[i] = DNNL_RUNTIME_DIM_VAL;
  }
  return dnnl::memory::desc(dims, md.data_type(), strides);
}

std::optional<AnyShapeMatMul> AnyShapeMatMulPd(Builder& b, const Chain& chain, ValueId a, ValueId w,
                                               const dnnl::memory::desc& a_md, const dnnl::memory::desc& b_md,
                                               const Dims& out) {
  const std::size_t rank = out.size();
  const Dims ad = a_md.dims(), bd = b_md.dims();
  if (rank < 2 || ad.size() != rank || bd.size() != rank) return std::nullopt;
  for (std::size_t i = 0; i + 2 < rank; ++i)
    if (ad[i] != bd[i]) return std::nullopt;  // a broadcast batch dim: no run-time form
  const Node& anchor = b.graph.node(chain.anchor);
  const std::vector<bool> va = AtRank(b.VaryingDimsOf(a), rank), vb = AtRank(b.VaryingDimsOf(w), rank),
                          vc = AtRank(b.VaryingDimsOf(anchor.outputs.at(0)), rank);
  // One flag per dim of the product: batch dims, M, K, N.
  std::vector<bool> batch(rank - 2);
  for (std::size_t i = 0; i + 2 < rank; ++i) batch[i] = va[i] || vb[i] || vc[i];
  const bool m = va[rank - 2] || vc[rank - 2], k = va[rank - 1] || vb[rank - 2], n = vb[rank - 1] || vc[rank - 1];
  if (!m && !k && !n && std::find(batch.begin(), batch.end(), true) == batch.end()) return std::nullopt;
  std::vector<bool> fa = batch, fb = batch, fc = batch;
  fa.push_back(m), fa.push_back(k);
  fb.push_back(k), fb.push_back(n);
  fc.push_back(m), fc.push_back(n);

  // The leading eltwise post-ops, as many as oneDNN computes right (RightPrefix:
  // two of one algorithm in one primitive are not).
  AnyShapeMatMul result;
  const std::size_t right = RightPrefix(chain, "matmul", out);
  while (result.count < right && chain.post_ops[result.count].kind == PostOp::Kind::kEltwise) ++result.count;
  try {
    result.pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(WithRunTimeDims(a_md, fa), WithRunTimeDims(b_md, fb), WithRunTimeDims(PlainDesc(out), fc)),
        b.Attr(BuildPostOps(b, chain, 0, result.count, out, nullptr)), b.engine);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  if (IsSlowImpl("matmul", result.pd.impl_info_str())) return std::nullopt;
  return result;
}

bool EmitAnyRowsMatMul(Builder& b, const Chain& chain, ValueId a, ValueId w, const Dims& ae, const Dims& we,
                       const Dims& out) {
  const Node& node = b.graph.node(chain.anchor);
  const dnnl::memory::desc a_md = PlainDesc(ae), w_md = PlainDesc(we);
  const std::optional<AnyShapeMatMul> any = AnyShapeMatMulPd(b, chain, a, w, a_md, w_md, out);
  if (!any) return false;
  Arg src = b.UsePlain(a, node);
  src.md = a_md;  // the same bytes at the product's rank
  const dnnl::memory weights =
      b.PackedConstant(chain.anchor, "weights", w_md, [&] { return b.HostView(w_md, b.Const(w, node).data.data()); });
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, Arg{-1, w_md, weights}}};
  FinishChain(b, chain, any->pd, "matmul", out, std::move(args), {src.slot}, any->count);
  return true;
}

}  // namespace onnxfuse::backend
