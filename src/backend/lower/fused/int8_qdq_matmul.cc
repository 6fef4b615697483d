#include "backend/lower/fused/int8_qdq_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "backend/lower/core/onednn_limits.h"
#include "backend/lower/fused/int8_conv.h"
#include "backend/lower/ops/matmul.h"
#include "ir/attributes.h"

namespace onnxfuse::backend {

using dnnl::memory;

namespace {

memory::format_tag PlainTag(std::size_t rank) {
  return rank == 2 ? memory::format_tag::ab : rank == 3 ? memory::format_tag::abc : memory::format_tag::abcd;
}

// `attr` with the int8 matmul's output scales (per column: mask on the last
// dim) and the source's zero point.
dnnl::primitive_attr Int8Attr(const dnnl::primitive_attr& attr, const std::vector<float>& scales, std::size_t rank,
                              std::int64_t zero_point) {
  dnnl::primitive_attr out = CopyOf(attr);
  const bool per_column = std::any_of(scales.begin(), scales.end(), [&](float s) { return s != scales[0]; });
  out.set_output_scales(per_column ? 1 << (rank - 1) : 0, per_column ? scales : std::vector<float>{scales[0]});
  if (zero_point != 0) out.set_zero_points(DNNL_ARG_SRC, 0, {static_cast<std::int32_t>(zero_point)});
  return out;
}

bool TryInt8(Builder& b, const Chain& chain, const QuantizedMatMul& qm) {
  if (!chain.affine.scale.empty()) return false;
  const Node& node = b.graph.node(chain.anchor);
  const Dims a = b.AnyActOf(qm.src, node).dims;
  const std::size_t rank = a.size();
  Dims w(rank, 1);
  w[rank - 2] = qm.weights->dims[0], w[rank - 1] = qm.weights->dims[1];
  Dims out = a;
  out.back() = w.back();
  std::vector<float> scales(qm.weight_scales.size());
  for (std::size_t n = 0; n < scales.size(); ++n)
    scales[n] = static_cast<float>(static_cast<double>(qm.src_quantization.scale) * qm.weight_scales[n]);
  const memory::data_type src_type = OneDnnType(qm.src_quantization.type);
  using MatMulPd = dnnl::matmul::primitive_desc;
  std::size_t count = 0;
  MatMulPd pd;
  try {
    pd = MakeChainPd<MatMulPd>(b, chain, out, "matmul", count, [&](const dnnl::primitive_attr& attr,
                                                                     const memory::desc& dst) {
      return MatMulPd(dnnl::matmul::desc(memory::desc(a, src_type, PlainTag(rank)),
                                         memory::desc(w, memory::data_type::s8, memory::format_tag::any),
                                         dst.is_zero() ? PlainDesc(out) : dst),
                      Int8Attr(attr, scales, rank, qm.src_quantization.zero_point), b.engine);
    });
  } catch (const Error&) {
    return false;  // no implementation: the float product
  }
  if (IsSlowImpl("matmul", pd.impl_info_str())) return false;
  std::vector<std::pair<int, Arg>> args;
  MakePostOps(b, chain, out, args, count);
  const Arg src = b.UseQuantized(qm.src, pd.src_desc(), node);
  std::vector<std::int8_t> plain;  // made only when packed now
  const memory weights = b.PackedConstant(chain.anchor, "int8 weights", pd.weights_desc(), [&] {
    plain.assign(qm.weights->int_data.begin(), qm.weights->int_data.end());
    return memory(PlainDesc(w, memory::data_type::s8), b.engine, plain.data());
  });
  args.emplace_back(DNNL_ARG_SRC, src);
  args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  FinishChain(b, chain, pd, "matmul", out, std::move(args), {src.slot}, count);
  return true;
}

}  // namespace

std::optional<QuantizedMatMul> QuantizedMatMulOf(Builder& b, const Node& matmul, std::string* why) {
  std::string reason;
  std::string& r = why ? *why : reason;
  r = "its input or weights are not DequantizeLinear outputs";
  if (matmul.op_type != "MatMul" || !matmul.domain.empty() || matmul.inputs.size() != 2) return std::nullopt;
  const Node* x = DequantizeProducing(b, matmul.inputs[0]);
  const Node* w = DequantizeProducing(b, matmul.inputs[1]);
  if (matmul.inputs[0] == matmul.inputs[1] || !x || !w || x->inputs.at(0) == kNoValue) return std::nullopt;
  if (b.DimsVary(matmul.inputs[0])) {
    r = "its rows vary between the session's shapes: one float product serves them all";
    return std::nullopt;
  }
  r = "its weights are not the DequantizeLinear of constant int8 [K, N] values with zero point 0 and one scale "
      "per tensor or per column";
  const ValueId wq = w->inputs.at(0), scale = w->inputs.size() > 1 ? w->inputs[1] : kNoValue;
  const ValueId zero = w->inputs.size() > 2 ? w->inputs[2] : kNoValue;
  if (!b.IsConst(wq)) {
    r = "its B is computed at run time: int8 is lowered for constant weights";
    return std::nullopt;
  }
  if (!b.HasConstData(wq) || scale == kNoValue || !b.HasConstData(scale) || (zero != kNoValue && !b.HasConstData(zero)))
    return std::nullopt;
  QuantizedMatMul qm;
  qm.weights = b.SharedConst(wq, *w);
  const Tensor& t = *qm.weights;
  if (t.DataType() != onnx::TensorProto::INT8 || t.dims.size() != 2) return std::nullopt;
  const std::int64_t columns = t.dims[1];
  const Tensor& s = b.Const(scale, *w);
  if (s.NumElements() == 1) {
    qm.weight_scales.assign(static_cast<std::size_t>(columns), s.data.at(0));
  } else {
    const std::int64_t axis = AttrInt(*w, "axis", 1);
    if (s.NumElements() != columns || (axis != 1 && axis != -1)) return std::nullopt;
    qm.weight_scales = s.data;
  }
  if (!std::all_of(qm.weight_scales.begin(), qm.weight_scales.end(), [](float f) { return f > 0 && std::isfinite(f); }))
    return std::nullopt;
  if (zero != kNoValue) {
    const Tensor& z = b.Const(zero, *w);
    if (!std::all_of(z.int_data.begin(), z.int_data.end(), [](std::int64_t v) { return v == 0; })) return std::nullopt;
  }
  r = "its input is not a per-tensor uint8 or int8 quantization";
  qm.src = x->inputs[0];
  const std::optional<PerTensor> src = SourceQuantization(b, qm.src, *x, matmul);
  if (!src) return std::nullopt;
  qm.src_quantization = *src;
  // A's dims as typed: it is asked before A is computed (LowerQuantize, ReadsAsInt8).
  const TensorType& a = b.graph.value(matmul.inputs[0]).type;
  if (!a.has_shape || a.dims.size() < 2 || a.dims.size() > 4 || a.dims.back() != t.dims[0]) {
    r = "its input is not of rank 2 to 4 with K = the weights' rows";
    return std::nullopt;
  }
  if (!SumsWithoutSaturation(t, r) || !SourceRunsInt8(src->type, r)) return std::nullopt;
  r.clear();
  return qm;
}

bool EmitInt8QdqMatMul(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  const ValueId x = node.inputs.at(0);
  const Node* dq = DequantizeProducing(b, x);
  if (!dq || !b.fuse) return false;  // not a QDQ product (the unfused plan runs the definition)
  const bool int8_src = b.IsInt8Act(dq->inputs.at(0));
  std::string why;
  const auto qm = QuantizedMatMulOf(b, node, &why);
  if (qm && int8_src && TryInt8(b, chain, *qm)) return true;
  if (qm && int8_src) why = "oneDNN has no fast int8 matmul for it";
  if (why.empty()) why = "its input is not an integer tensor here";
  const std::size_t first = b.steps.size();
  DequantizeIfOnlyInteger(b, *dq, node);  // the float values for the float product
  EmitMatMul(b, chain);
  for (std::size_t i = first; i < b.steps.size(); ++i)
    if (b.steps[i].kind == "matmul") b.steps[i].note = "float, not int8: " + why;
  return true;
}

}  // namespace onnxfuse::backend
