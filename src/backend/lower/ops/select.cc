#include "backend/lower/ops/select.h"

#include <memory>

#include "backend/kernels/select.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/kernel_operand.h"

namespace onnxfuse::backend {

bool LowerWhere(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (node.op_type != "Where" || !node.domain.empty() || node.num_explicit_inputs != 3) return false;
  const ValueId cond = node.inputs[0], x = node.inputs[1], y = node.inputs[2];
  if (StorageOf(b, x, node) != onnx::TensorProto::FLOAT || StorageOf(b, y, node) != onnx::TensorProto::FLOAT ||
      StorageOf(b, cond, node) != onnx::TensorProto::INT64)
    return false;

  std::vector<std::pair<int, Arg>> args;
  KernelOperand<std::int64_t> c;
  if (b.IsAct(cond)) {
    const Act& act = b.AnyActOf(cond, node);
    c.arg = static_cast<int>(args.size()), c.dims = act.dims;
    args.emplace_back(c.arg, Arg{act.slot, act.md, {}});
  } else {
    const Tensor& t = b.Const(cond, node);
    c.constant = std::make_shared<const std::vector<std::int64_t>>(t.int_data), c.dims = t.dims;
    b.weight_bytes += static_cast<std::int64_t>(t.int_data.size() * sizeof(std::int64_t));
  }
  const std::array<KernelOperand<float>, 2> xy = {FloatKernelOperand(b, x, node, args), FloatKernelOperand(b, y, node, args)};
  const Dims out = BroadcastDims(BroadcastDims(c.dims, xy[0].dims), xy[1].dims);
  const Act dst = b.NewAct(out, PlainDesc(out));
  const int dst_arg = static_cast<int>(args.size());
  args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
  const BroadcastPlan<3> plan = PlanBroadcast<3>(out, {c.dims, xy[0].dims, xy[1].dims});
  CustomKernel kernel = [c, xy, plan, dst_arg](const std::vector<void*>& data) {
    WhereSelect(c.Data(data), xy[0].Data(data), xy[1].Data(data), static_cast<float*>(data[static_cast<std::size_t>(dst_arg)]),
                plan);
  };
  b.EmitCustom("where", node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:where");
  b.SetAct(node.outputs[0], dst);
  return true;
}

}  // namespace onnxfuse::backend
