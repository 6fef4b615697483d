#include "backend/lower/fused/int8_matmul.h"

#include <algorithm>
#include <cmath>

#include "backend/lower/core/onednn_limits.h"

namespace onnxfuse::backend {

bool ReadsAsInt8MatMul(Builder& b, const Node& reader, ValueId v, const Dims& a) {
  if (!b.fuse || !b.fake_quantize || !HasInt8DotProduct()) return false;
  if (reader.op_type != "MatMul" || !reader.domain.empty() || reader.inputs.size() != 2) return false;
  if (reader.inputs[0] != v || reader.inputs[1] == v || !b.IsConst(reader.inputs[1])) return false;
  const Dims w = b.ConstDims(reader.inputs[1], reader);
  if (w.size() != 2 || a.size() < 2 || a.back() != w[0]) return false;
  return b.ConstFact(reader.inputs[1], reader, "int8 values", [](const Tensor& values) {
    return values.elem_type == onnx::TensorProto::FLOAT &&
           std::all_of(values.data.begin(), values.data.end(),
                       [](float x) { return x >= -128.0f && x <= 127.0f && std::nearbyint(x) == x; });
  });
}

std::vector<std::int8_t> Int8Weights(const Tensor& weights) {
  std::vector<std::int8_t> out(weights.data.size());
  std::transform(weights.data.begin(), weights.data.end(), out.begin(),
                 [](float x) { return static_cast<std::int8_t>(x); });
  return out;
}

bool EmitInt8MatMulAnyRows(Builder& b, const Chain& chain, ValueId a, ValueId w, const Dims& a_dims,
                           const Dims& w_dims, const Dims& out_dims) {
  using memory = dnnl::memory;
  const std::size_t rank = out_dims.size();
  if (rank < 2 || rank > 4) return false;
  // The leading eltwise post-ops, as far as oneDNN computes them right; a
  // binary one (the scale, the bias) runs after it: oneDNN 2.6.3's gemm:jit
  // int8 matmul with run-time dims crashes executing binary post-ops.
  const std::size_t right = RightPrefix(chain, "matmul", out_dims);
  std::size_t count = 0;
  while (count < right && chain.post_ops[count].kind == PostOp::Kind::kEltwise) ++count;
  Dims src = a_dims, dst = out_dims;
  src[rank - 2] = DNNL_RUNTIME_DIM_VAL, dst[rank - 2] = DNNL_RUNTIME_DIM_VAL;
  const memory::format_tag tag = rank == 2 ? memory::format_tag::ab : rank == 3 ? memory::format_tag::abc
                                                                                : memory::format_tag::abcd;
  dnnl::matmul::primitive_desc pd;
  try {
    const dnnl::primitive_attr attr =
        WithRunTimeSrcZeroPoint(b.Attr(BuildPostOps(b, chain, 0, count, out_dims, nullptr)));
    pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(memory::desc(src, memory::data_type::u8, tag),
                           memory::desc(w_dims, memory::data_type::s8, memory::format_tag::any),
                           memory::desc(dst, memory::data_type::f32, tag)),
        attr, b.engine);
  } catch (const dnnl::error&) {
    return false;
  }
  if (IsSlowImpl("matmul", pd.impl_info_str())) return false;
  std::vector<std::pair<int, Arg>> args;
  const std::vector<int> read = BindInt8MatMul(b, chain, pd, a, w, a_dims, w_dims, args);
  FinishChain(b, chain, pd, "matmul", out_dims, std::move(args), read, count);
  return true;
}

std::vector<int> BindInt8MatMul(Builder& b, const Chain& chain, const dnnl::matmul::primitive_desc& pd, ValueId a,
                                ValueId w, const Dims& a_dims, const Dims& w_dims,
                                std::vector<std::pair<int, Arg>>& args) {
  using memory = dnnl::memory;
  const Node& node = b.graph.node(chain.anchor);
  const Act& q = b.AnyActOf(a, node);
  args.emplace_back(DNNL_ARG_SRC, Arg{q.slot, PlainDesc(a_dims, memory::data_type::u8), {}});
  args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                    Arg{q.zero_point_slot, PlainDesc({1}, memory::data_type::s32), {}});
  std::vector<std::int8_t> plain;  // made only when packed now
  const memory weights = b.PackedConstant(chain.anchor, "int8 weights", pd.weights_desc(), [&] {
    plain = Int8Weights(b.Const(w, node));
    return memory(PlainDesc(w_dims, memory::data_type::s8), b.engine, plain.data());
  });
  args.emplace_back(DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights});
  return {q.slot, q.zero_point_slot};
}

dnnl::primitive_attr WithRunTimeSrcZeroPoint(const dnnl::primitive_attr& attr) {
  dnnl::primitive_attr out = CopyOf(attr);
  out.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  return out;
}

}  // namespace onnxfuse::backend
