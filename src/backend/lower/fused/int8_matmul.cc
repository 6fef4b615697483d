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
  const Tensor& values = b.Const(reader.inputs[1], reader);
  if (values.elem_type != onnx::TensorProto::FLOAT) return false;
  return std::all_of(values.data.begin(), values.data.end(),
                     [](float x) { return x >= -128.0f && x <= 127.0f && std::nearbyint(x) == x; });
}

std::vector<std::int8_t> Int8Weights(const Tensor& weights) {
  std::vector<std::int8_t> out(weights.data.size());
  std::transform(weights.data.begin(), weights.data.end(), out.begin(),
                 [](float x) { return static_cast<std::int8_t>(x); });
  return out;
}

dnnl::primitive_attr WithRunTimeSrcZeroPoint(const dnnl::primitive_attr& attr) {
  dnnl_primitive_attr_t copy = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_attr_clone(&copy, attr.get()), "could not clone a primitive attribute");
  dnnl::primitive_attr out(copy);
  out.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  return out;
}

}  // namespace onnxfuse::backend
