#include "backend/lower/core/kernel_operand.h"

namespace onnxfuse::backend {

std::int32_t StorageOf(Builder& b, ValueId v, const Node& user) {
  if (b.IsAct(v)) return b.AnyActOf(v, user).elem_type;
  if (b.IsConst(v)) return b.Const(v, user).elem_type;
  return onnx::TensorProto::UNDEFINED;
}

KernelOperand<float> FloatKernelOperand(Builder& b, ValueId v, const Node& user, std::vector<std::pair<int, Arg>>& args) {
  KernelOperand<float> operand;
  if (b.IsAct(v)) {
    const Arg arg = b.UsePlain(v, user);
    operand.arg = static_cast<int>(args.size()), operand.dims = b.ActOf(v, user).dims;
    args.emplace_back(operand.arg, arg);
  } else {
    const Tensor& t = b.Const(v, user);
    operand.constant = std::make_shared<const std::vector<float>>(t.data), operand.dims = t.dims;
    b.weight_bytes += static_cast<std::int64_t>(t.data.size() * sizeof(float));
  }
  return operand;
}

}  // namespace onnxfuse::backend
