#include "backend/lower/select.h"

#include <memory>

#include "backend/kernels/select.h"
#include "backend/lower/host_tensor.h"

namespace onnxfuse::backend {

namespace {

// An operand: a constant's elements, or the data pointer at `arg` of an activation.
template <typename T>
struct Operand {
  std::shared_ptr<const std::vector<T>> constant;
  int arg = -1;
  Dims dims;

  const T* Data(const std::vector<void*>& data) const {
    return constant ? constant->data() : static_cast<const T*>(data[static_cast<std::size_t>(arg)]);
  }
};

// The storage type `v` is read in: an activation's or a constant's;
// UNDEFINED when it is neither (yet).
std::int32_t StorageOf(Builder& b, ValueId v, const Node& user) {
  if (b.IsAct(v)) return b.AnyActOf(v, user).elem_type;
  if (b.IsConst(v)) return b.Const(v, user).elem_type;
  return onnx::TensorProto::UNDEFINED;
}

}  // namespace

bool LowerWhere(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (node.op_type != "Where" || !node.domain.empty() || node.num_explicit_inputs != 3) return false;
  const ValueId cond = node.inputs[0], x = node.inputs[1], y = node.inputs[2];
  if (StorageOf(b, x, node) != onnx::TensorProto::FLOAT || StorageOf(b, y, node) != onnx::TensorProto::FLOAT ||
      StorageOf(b, cond, node) != onnx::TensorProto::INT64)
    return false;

  std::vector<std::pair<int, Arg>> args;
  Operand<std::int64_t> c;
  if (b.IsAct(cond)) {
    const Act& act = b.AnyActOf(cond, node);
    c.arg = static_cast<int>(args.size()), c.dims = act.dims;
    args.emplace_back(c.arg, Arg{act.slot, act.md, {}});
  } else {
    const Tensor& t = b.Const(cond, node);
    c.constant = std::make_shared<const std::vector<std::int64_t>>(t.int_data), c.dims = t.dims;
    b.weight_bytes += static_cast<std::int64_t>(t.int_data.size() * sizeof(std::int64_t));
  }
  std::array<Operand<float>, 2> xy;
  for (std::size_t k = 0; k < 2; ++k) {
    const ValueId v = node.inputs[k + 1];
    if (b.IsAct(v)) {
      const Arg arg = b.UsePlain(v, node);
      xy[k].arg = static_cast<int>(args.size()), xy[k].dims = b.ActOf(v, node).dims;
      args.emplace_back(xy[k].arg, arg);
    } else {
      const Tensor& t = b.Const(v, node);
      xy[k].constant = std::make_shared<const std::vector<float>>(t.data), xy[k].dims = t.dims;
      b.weight_bytes += static_cast<std::int64_t>(t.data.size() * sizeof(float));
    }
  }
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
