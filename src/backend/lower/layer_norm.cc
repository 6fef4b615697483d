// Reductions, and the two decompositions exporters write for ops ONNX
// opset 13 lacks, recognized as one primitive each in fused mode (as ONNX
// Runtime's level-1 LayerNormFusion and GeluFusion do):
//   LayerNormalization over the last axis:
//     m = ReduceMean(x, [-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), [-1]);
//     y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, gamma)] [; y = Add(y, beta)]
//     -> layer_normalization_forward (use_scale | use_shift)
//   Gelu (erf form): y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) -> eltwise gelu_erf
// The pattern's inner values must have no other readers; its nodes may belong
// to several fusion groups (they are absorbed wherever they are).
#include <algorithm>
#include <cmath>
#include <map>

#include <omp.h>

#include "ir/attrs.h"
#include "backend/kernels/activation.h"
#include "backend/lower/host_eval.h"
#include "backend/lower/lower.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

// The other input of a two-input node, given one of them.
ValueId Other(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : kNoValue;
}

bool ConstNear(Builder& b, ValueId v, double want, double tol, double* value = nullptr) {
  if (v == kNoValue || !b.IsConst(v)) return false;
  const Tensor& t = b.Const(v, b.graph.node(0));
  if (t.NumElements() != 1 || t.elem_type != onnx::TensorProto::FLOAT) return false;
  if (value) *value = t.data[0];
  return std::isnan(want) || std::fabs(t.data[0] - want) <= tol;
}

bool LastAxisMean(const Node& n, std::size_t rank) {
  auto axes = AttrInts(n, "axes");
  return n.op_type == "ReduceMean" && AttrInt(n, "keepdims", 1) == 1 && axes.size() == 1 &&
         (axes[0] == -1 || axes[0] == static_cast<std::int64_t>(rank) - 1);
}

}  // namespace

const Node* SoleUser(const Builder& b, ValueId v, const char* op) {
  const Value& value = b.graph.value(v);
  if (value.consumers.size() != 1 || value.is_graph_output) return nullptr;
  const Node& n = b.graph.node(value.consumers[0]);
  return n.op_type == op && n.domain.empty() && !b.absorbed[value.consumers[0]] ? &n : nullptr;
}

bool ConvReadsAsData(const Builder& b, const Node& n, ValueId v) {
  return n.op_type == "Conv" && n.domain.empty() && n.inputs.size() >= 2 && n.inputs[0] == v &&
         std::count(n.inputs.begin(), n.inputs.end(), v) == 1 && b.IsConst(n.inputs[1]) && AttrInt(n, "group", 1) == 1;
}

bool IsPooling(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";
}

void Absorb(Builder& b, const std::vector<const Node*>& nodes) {
  for (const Node* n : nodes) {
    b.Consume(*n);
    b.absorbed[static_cast<std::size_t>(n - b.graph.nodes().data())] = true;
  }
}

bool TryLayerNorm(Builder& b, NodeId id) {
  const Node& r1 = b.graph.node(id);
  if (!b.fuse || !b.IsAct(r1.inputs.at(0))) return false;
  ValueId x = r1.inputs[0];
  Dims dims = b.ActOf(x, r1).dims;
  if (!LastAxisMean(r1, dims.size())) return false;
  const Node* sub = SoleUser(b, r1.outputs[0], "Sub");
  if (!sub || sub->inputs[0] != x || sub->inputs[1] != r1.outputs[0]) return false;
  ValueId d = sub->outputs[0];
  const Value& dv = b.graph.value(d);
  if (dv.consumers.size() != 2 || dv.is_graph_output) return false;
  const Node *pow = nullptr, *div = nullptr;
  for (NodeId c : dv.consumers) {
    const Node& n = b.graph.node(c);
    if (n.op_type == "Pow" && n.inputs[0] == d) pow = &n;
    if (n.op_type == "Div" && n.inputs[0] == d) div = &n;
  }
  double eps = 0;
  if (!pow || !div || !ConstNear(b, pow->inputs[1], 2.0, 0)) return false;
  const Node* r2 = SoleUser(b, pow->outputs[0], "ReduceMean");
  if (!r2 || !LastAxisMean(*r2, dims.size())) return false;
  const Node* add = SoleUser(b, r2->outputs[0], "Add");
  if (!add || !ConstNear(b, Other(*add, r2->outputs[0]), NAN, 0, &eps)) return false;
  const Node* sqrt = SoleUser(b, add->outputs[0], "Sqrt");
  if (!sqrt || SoleUser(b, sqrt->outputs[0], "Div") != div || div->inputs[1] != sqrt->outputs[0]) return false;
  std::vector<const Node*> nodes = {&r1, sub, pow, r2, add, sqrt, div};
  const std::int64_t channels = dims.back();
  std::vector<float> scale(static_cast<std::size_t>(channels), 1.f), shift(static_cast<std::size_t>(channels), 0.f);
  ValueId out = div->outputs[0];
  for (const char* op : {"Mul", "Add"}) {  // the affine tail, when its parameters are [C] constants
    const Node* n = SoleUser(b, out, op);
    ValueId p = n ? Other(*n, out) : kNoValue;
    if (!n || !b.IsConst(p)) break;
    const Tensor& t = b.Const(p, *n);
    if (t.elem_type != onnx::TensorProto::FLOAT || t.NumElements() != channels || t.dims.size() != 1) break;
    (std::string(op) == "Mul" ? scale : shift) = b.Const(p, *n).data;
    nodes.push_back(n);
    out = n->outputs[0];
  }

  Arg src = b.UsePlain(x, r1);
  dnnl::memory scale_mem = b.HostMemory(PlainDesc({channels}), scale.data());
  dnnl::memory shift_mem = b.HostMemory(PlainDesc({channels}), shift.data());
  Act dst = EmitLayerNormPrimitive(b, r1, r1.name + "+LayerNormalization", src, dims, static_cast<float>(eps),
                                   Arg{-1, scale_mem.get_desc(), scale_mem}, Arg{-1, shift_mem.get_desc(), shift_mem});
  Absorb(b, nodes);
  b.SetAct(out, dst);
  return true;
}

Act EmitLayerNormPrimitive(Builder& b, const Node& node, const std::string& label, const Arg& src, const Dims& dims,
                           float epsilon, const Arg& scale, const Arg& shift, Act* mean, Act* variance) {
  const bool stats = mean || variance;
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc desc(
      stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, src.md, epsilon, flags);
  dnnl::layer_normalization_forward::primitive_desc pd;
  try {
    pd = dnnl::layer_normalization_forward::primitive_desc(desc, b.Attr(), b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no layer normalization: ") + e.what());
  }
  Act dst = b.NewAct(dims, pd.dst_desc());
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}};
  if (stats) {  // forward_training writes both statistics
    Dims rows = DimsOf(pd.mean_desc());
    Act m = b.NewAct(rows, pd.mean_desc()), v = b.NewAct(rows, pd.variance_desc());
    args.emplace_back(DNNL_ARG_MEAN, Arg{m.slot, m.md, {}});
    args.emplace_back(DNNL_ARG_VARIANCE, Arg{v.slot, v.md, {}});
    if (mean) *mean = m;
    if (variance) *variance = v;
  }
  args.emplace_back(DNNL_ARG_DST, Arg{dst.slot, pd.dst_desc(), {}});
  b.Emit(pd, "layer_norm", label, std::move(args), pd.dst_desc());
  dst.md = PlainDesc(dims);  // the same bytes as the 2-D view the primitive wrote
  return dst;
}

std::optional<ValueId> MatchGelu(Builder& b, ValueId x, bool absorb) {
  const Value& xv = b.graph.value(x);
  if (xv.consumers.size() != 2) return std::nullopt;
  const Node* div = nullptr;
  for (NodeId c : xv.consumers) {
    const Node& n = b.graph.node(c);
    if (n.op_type == "Div" && n.inputs[0] == x && !b.absorbed[c]) div = &n;
  }
  if (!div || !ConstNear(b, div->inputs[1], std::sqrt(2.0), 1e-3)) return std::nullopt;
  const Node* erf = SoleUser(b, div->outputs[0], "Erf");
  const Node* add = erf ? SoleUser(b, erf->outputs[0], "Add") : nullptr;
  if (!add || !ConstNear(b, Other(*add, erf->outputs[0]), 1.0, 1e-6)) return std::nullopt;
  const Node* mul = SoleUser(b, add->outputs[0], "Mul");
  if (!mul || Other(*mul, add->outputs[0]) != x) return std::nullopt;
  const Node* half = SoleUser(b, mul->outputs[0], "Mul");
  if (!half || !ConstNear(b, Other(*half, mul->outputs[0]), 0.5, 1e-6)) return std::nullopt;
  if (absorb) Absorb(b, {div, erf, add, mul, half});
  return half->outputs[0];
}

void EmitGelu(Builder& b, NodeId div_id) {
  const Node& div = b.graph.node(div_id);
  ValueId x = div.inputs[0];
  auto out = MatchGelu(b, x, true);
  Check(out.has_value(), "EmitGelu without a Gelu pattern");
  Arg src = IsDense(b.ActOf(x, div).md) ? b.UseAsIs(x, div) : b.UsePlain(x, div);  // the kernel runs over all bytes
  Act dst = b.NewAct(b.ActOf(x, div).dims, src.md);
  const std::int64_t count = static_cast<std::int64_t>(src.md.get_size() / sizeof(float));
  b.EmitCustom("gelu", div.name + "+Gelu", {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
               [count](const std::vector<void*>& data) {
                 Gelu(static_cast<const float*>(data[0]), static_cast<float*>(data[1]), count);
               },
               dst.md);
  b.SetAct(*out, dst);
}

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

}  // namespace

void EmitReduce(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  Dims in = b.ActOf(node.inputs.at(0), node).dims;
  std::vector<std::int64_t> axes = AttrInts(node, "axes");
  if ((op == "ReduceSum" && b.graph.opset() >= 13) || b.graph.opset() >= 18) {
    if (node.num_explicit_inputs > 1 && node.inputs[1] != kNoValue) axes = AsInts(b.Const(node.inputs[1], node));
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
  Arg src = b.UsePlain(node.inputs[0], node);
  if (op == "ReduceLogSumExp") {  // log(sum(exp(x))) as ONNX defines it: exp first, as its own step
    dnnl::eltwise_forward::desc exp_desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_exp, src.md);
    auto exp_pd = MakePd<dnnl::eltwise_forward::primitive_desc>(b, node, exp_desc, b.Attr());
    Act exp = b.NewAct(in, PlainDesc(in));
    b.Emit(exp_pd, "eltwise", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{exp.slot, exp.md, {}}}}, exp.md);
    src = Arg{exp.slot, exp.md, {}};
  }
  dnnl::post_ops ops;  // ReduceLogSum, ReduceLogSumExp: the log of the sum, a post-op
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") ops.append_eltwise(1.f, dnnl::algorithm::eltwise_log, 0.f, 0.f);
  dnnl::reduction::primitive_desc pd;
  try {
    dnnl::reduction::desc desc(reduction->second.alg, src.md, PlainDesc(kept), reduction->second.p, 0.f);
    pd = dnnl::reduction::primitive_desc(desc, b.Attr(ops), b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
  Act dst = b.NewAct(kept, pd.dst_desc());
  b.Emit(pd, "reduction", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
  if (AttrInt(node, "keepdims", 1) == 0) dst = Act{dst.slot, PlainDesc(squeezed), squeezed};
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
