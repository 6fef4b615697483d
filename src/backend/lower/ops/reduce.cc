// Reductions: ONNX Reduce* as oneDNN's reduction primitive; a mean over the
// spatial axes as GlobalAveragePool's (spatial_mean.h).
#include "backend/lower/ops/reduce.h"

#include <map>
#include <optional>
#include <string>

#include "backend/kernels/reduce.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/ops/spatial_mean.h"

namespace onnxfuse::backend {

namespace {

// A Reduce* whose reduced axes all have size 1: every output element reduces
// one input element, which oneDNN's reduction refuses (its destination must
// differ from its source). Mean, Sum, Max, Min, Prod and LogSumExp of one x
// are x (a view of the input); L1 and L2 are |x|, SumSquare x^2, LogSum log x
// (ONNX Operators.md, Reduce*).
void EmitOneElementReduction(Builder& b, const Node& node, const Dims& in, const Dims& squeezed) {
  const std::string& op = node.op_type;
  const Dims out = AttrInt(node, "keepdims", 1) == 0 ? squeezed : in;
  const dnnl::algorithm alg = op == "ReduceL1" || op == "ReduceL2" ? dnnl::algorithm::eltwise_abs
                              : op == "ReduceSumSquare"            ? dnnl::algorithm::eltwise_square
                              : op == "ReduceLogSum"               ? dnnl::algorithm::eltwise_log
                                                                   : dnnl::algorithm::undef;
  Arg x = b.UsePlain(node.inputs[0], node);
  if (alg == dnnl::algorithm::undef) return b.SetAct(node.outputs[0], Act{x.slot, PlainDesc(out), out});
  dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, alg, x.md);
  auto pd = MakePd<dnnl::eltwise_forward::primitive_desc>(b, node, desc, b.Attr());
  Act dst = b.NewAct(in, PlainDesc(in));
  b.Emit(pd, "eltwise", node.name, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  b.SetAct(node.outputs[0], Act{dst.slot, PlainDesc(out), out});
}

// The Reduce* op as our kernel's steps (backend/kernels/reduce.h): its fold,
// what it applies to each element first and to each result last.
ReduceStep OwnStepOf(const std::string& op, std::int64_t count) {
  ReduceStep s;
  if (op == "ReduceMax") s.fold = ReduceFold::kMax;
  else if (op == "ReduceMin") s.fold = ReduceFold::kMin;
  else if (op == "ReduceProd") s.fold = ReduceFold::kProd;
  if (op == "ReduceL1") s.pre = ReduceMap::kAbs;
  else if (op == "ReduceL2" || op == "ReduceSumSquare") s.pre = ReduceMap::kSquare;
  else if (op == "ReduceLogSumExp") s.pre = ReduceMap::kExp;
  if (op == "ReduceMean") s.post = ReduceMap::kScale, s.scale = 1.f / static_cast<float>(count);
  else if (op == "ReduceL2") s.post = ReduceMap::kSqrt;
  else if (op == "ReduceLogSum" || op == "ReduceLogSumExp") s.post = ReduceMap::kLog;
  return s;
}

// The reduction on our kernel, where oneDNN's is its reference one: one step
// per run of adjacent reduced axes, innermost first, each over the middle
// axis of [outer, r, inner]; the first applies the op's map to each element,
// the last its map to each result, the ones between only fold.
Act EmitOwnReduce(Builder& b, const Node& node, const Dims& in, const Dims& kept) {
  Dims cur = in;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < in.size(); ++d)
    if (kept[d] != in[d]) count *= in[d];
  const ReduceStep whole = OwnStepOf(node.op_type, count);
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [first, end) of reduced axes, innermost last
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (kept[d] == in[d]) continue;
    if (!runs.empty() && runs.back().second == d) runs.back().second = d + 1;
    else runs.emplace_back(d, d + 1);
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  Act dst;
  for (std::size_t n = runs.size(); n-- > 0;) {
    const auto [first, end] = runs[n];
    ReduceStep step = whole;
    if (n + 1 != runs.size()) step.pre = ReduceMap::kNone;  // the innermost run's step maps the elements
    if (n != 0) step.post = ReduceMap::kNone;               // the outermost one's the results
    auto product = [&](std::size_t lo, std::size_t hi) {
      std::int64_t p = 1;
      for (std::size_t d = lo; d < hi; ++d) p *= cur[d];
      return p;
    };
    const std::int64_t outer = product(0, first), r = product(first, end), inner = product(end, cur.size());
    for (std::size_t d = first; d < end; ++d) cur[d] = 1;
    dst = b.NewAct(cur, PlainDesc(cur));
    CustomKernel kernel = [step, outer, r, inner](const std::vector<void*>& data) {
      ReduceMiddle(step, static_cast<const float*>(data[0]), static_cast<float*>(data[1]), outer, r, inner);
    };
    b.EmitCustom("reduction", node.name, {{0, src}, {1, Arg{dst.slot, dst.md, {}}}}, std::move(kernel), dst.md,
                 "onnxfuse:reduce");
    src = Arg{dst.slot, dst.md, {}};
  }
  return dst;
}

}  // namespace

void EmitReduce(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  Dims in = b.ActOf(node.inputs.at(0), node).dims;
  std::vector<std::int64_t> axes = AttrInts(node, "axes");
  if ((op == "ReduceSum" && b.graph.opset() >= 13) || b.graph.opset() >= 18) {
    if (node.num_explicit_inputs > 1 && node.inputs[1] != kNoValue) axes = eval::AsInts(b.Const(node.inputs[1], node));
    if (axes.empty() && AttrInt(node, "noop_with_empty_axes", 0)) {  // the input itself (ONNX ReduceSum-13)
      Arg x = b.UseAsIs(node.inputs[0], node);
      b.SetAct(node.outputs[0], Act{x.slot, x.md, in});
      return;
    }
  }
  Dims kept = in, squeezed;
  for (std::size_t d = 0; d < in.size(); ++d) {
    bool reduced = axes.empty();
    for (auto a : axes) reduced |= (a < 0 ? a + static_cast<std::int64_t>(in.size()) : a) == static_cast<std::int64_t>(d);
    if (reduced) kept[d] = 1;
    else squeezed.push_back(in[d]);
  }
  // ONNX Reduce* -> oneDNN reduction (oneDNN 2.6 "Reduction" primitive): the Lp
  // algorithms take p; norm_lp_sum is (sum |x|^p)^(1/p), norm_lp_power_p_sum is sum |x|^p.
  struct Reduction {
    dnnl::algorithm alg;
    float p;
  };
  static const std::map<std::string, Reduction> kReductions = {
      {"ReduceMean", {dnnl::algorithm::reduction_mean, 0.f}},
      {"ReduceSum", {dnnl::algorithm::reduction_sum, 0.f}},
      {"ReduceMax", {dnnl::algorithm::reduction_max, 0.f}},
      {"ReduceMin", {dnnl::algorithm::reduction_min, 0.f}},
      {"ReduceProd", {dnnl::algorithm::reduction_mul, 0.f}},
      {"ReduceL1", {dnnl::algorithm::reduction_norm_lp_sum, 1.f}},
      {"ReduceL2", {dnnl::algorithm::reduction_norm_lp_sum, 2.f}},
      {"ReduceSumSquare", {dnnl::algorithm::reduction_norm_lp_power_p_sum, 2.f}},
      {"ReduceLogSum", {dnnl::algorithm::reduction_sum, 0.f}},
      {"ReduceLogSumExp", {dnnl::algorithm::reduction_sum, 0.f}},
  };
  auto reduction = kReductions.find(op);
  if (reduction == kReductions.end()) Unsupported(b, node, op + " has no oneDNN reduction");
  if (kept == in) return EmitOneElementReduction(b, node, in, squeezed);
  // A mean over exactly the spatial axes is GlobalAveragePool's mean: the same
  // step, so that the two agree to the bit (spatial_mean.h).
  Dims spatial_kept = in;
  for (std::size_t d = 2; d < in.size(); ++d) spatial_kept[d] = 1;
  if (op == "ReduceMean" && in.size() >= 3 && in.size() <= 5 && kept == spatial_kept) {
    Act dst = EmitSpatialMean(b, node, b.UseAsIs(node.inputs[0], node), in, node.name);
    if (AttrInt(node, "keepdims", 1) == 0) dst = Act{dst.slot, PlainDesc(squeezed), squeezed};
    return b.SetAct(node.outputs[0], dst);
  }
  dnnl::post_ops ops;  // ReduceLogSum, ReduceLogSumExp: the log of the sum, a post-op
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") ops.append_eltwise(1.f, dnnl::algorithm::eltwise_log, 0.f, 0.f);
  const auto make_desc = [&](const dnnl::memory::desc& src_md) {
    return dnnl::reduction::desc(reduction->second.alg, src_md, PlainDesc(kept), reduction->second.p, 0.f);
  };
  if (StorageOf(b, node.inputs[0], node) == onnx::TensorProto::FLOAT) {
    // oneDNN 2.6 reduces over the innermost axes on a jit kernel, over any
    // other only on its reference one: those run on ours (reduce.h).
    try {
      const dnnl::reduction::primitive_desc probe(make_desc(PlainDesc(in)), b.Attr(ops), b.engine);
      if (IsSlowImpl("reduction", probe.impl_info_str())) {
        Act dst = EmitOwnReduce(b, node, in, kept);
        if (AttrInt(node, "keepdims", 1) == 0) dst = Act{dst.slot, PlainDesc(squeezed), squeezed};
        return b.SetAct(node.outputs[0], dst);
      }
    } catch (const dnnl::error&) {
    }  // reported below
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  if (op == "ReduceLogSumExp") {  // log(sum(exp(x))) as ONNX defines it: exp first, as its own step
    dnnl::eltwise_forward::desc exp_desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_exp, src.md);
    auto exp_pd = MakePd<dnnl::eltwise_forward::primitive_desc>(b, node, exp_desc, b.Attr());
    Act exp = b.NewAct(in, PlainDesc(in));
    b.Emit(exp_pd, "eltwise", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{exp.slot, exp.md, {}}}}, exp.md);
    src = Arg{exp.slot, exp.md, {}};
  }
  dnnl::reduction::primitive_desc pd;
  try {
    pd = dnnl::reduction::primitive_desc(make_desc(src.md), b.Attr(ops), b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
  Act dst = b.NewAct(kept, pd.dst_desc());
  b.Emit(pd, "reduction", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  if (AttrInt(node, "keepdims", 1) == 0) dst = Act{dst.slot, PlainDesc(squeezed), squeezed};
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
