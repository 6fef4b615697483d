#include "backend/lower/ops/gather_rows.h"

#include <algorithm>
#include <memory>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "ir/tensor_io.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

bool LowerGatherRows(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (node.op_type != "Gather" || !node.domain.empty() || node.num_explicit_inputs != 2 || node.outputs.size() != 1)
    return false;
  const ValueId data = node.inputs[0], indices = node.inputs[1];
  if (!b.IsAct(indices) || b.AnyActOf(indices, node).elem_type != onnx::TensorProto::INT64) return false;
  if (b.graph.value(node.outputs[0]).type.elem_type != onnx::TensorProto::FLOAT) return false;
  // The table's element type from the graph: a constant is decoded only once it is taken.
  const bool table = !b.IsAct(data);
  if (table ? !b.HasConstData(data) || b.graph.value(data).type.elem_type != onnx::TensorProto::FLOAT
            : b.AnyActOf(data, node).elem_type != onnx::TensorProto::FLOAT)
    return false;

  const Dims in = table ? b.ConstDims(data, node) : b.ActOf(data, node).dims;
  if (in.empty()) return false;  // Gather needs rank >= 1; the host evaluator says so
  const Act& idx = b.AnyActOf(indices, node);
  const auto axis = static_cast<std::size_t>(eval::NormAxis(AttrInt(node, "axis", 0), in.size(), node));
  const eval::GatherExtents extents = eval::GatherExtentsOf(in, axis, idx.dims);
  const Dims& out = extents.out;
  if (Product(out) == 0) return false;  // host steps take empty tensors
  const std::int64_t outer = extents.outer, n = extents.n, inner = extents.inner, count = extents.count;

  std::vector<std::pair<int, Arg>> args;
  std::shared_ptr<const Tensor> constant;
  int data_arg = -1;
  if (table) {
    constant = b.SharedConst(data, node);
    b.weight_bytes += static_cast<std::int64_t>(constant->data.size() * sizeof(float));
  } else {
    data_arg = static_cast<int>(args.size());
    args.emplace_back(data_arg, b.UsePlain(data, node));
  }
  const int index_arg = static_cast<int>(args.size());
  args.emplace_back(index_arg, Arg{idx.slot, idx.md, {}});
  const Act dst = b.NewAct(out, PlainDesc(out));
  const int dst_arg = static_cast<int>(args.size());
  args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
  CustomKernel kernel = [constant, data_arg, index_arg, dst_arg, outer, n, inner, count,
                         label = NodeLabel(node)](const std::vector<void*>& ptrs) {
    const float* x = constant ? constant->data.data() : static_cast<const float*>(ptrs[static_cast<std::size_t>(data_arg)]);
    const auto* k = static_cast<const std::int64_t*>(ptrs[static_cast<std::size_t>(index_arg)]);
    auto* y = static_cast<float*>(ptrs[static_cast<std::size_t>(dst_arg)]);
    if (std::any_of(k, k + count, [n](std::int64_t i) { return i < -n || i >= n; }))
      throw Error(ErrorKind::kInvalidModel, label + ": index out of range");
    GatherRows(x, k, count, outer, n, inner, y);
  };
  b.EmitCustom("gather", node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:gather_rows");
  b.SetAct(node.outputs[0], dst);
  return true;
}

void GatherRows(const float* x, const std::int64_t* k, std::int64_t count, std::int64_t outer, std::int64_t n,
                std::int64_t inner, float* y) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < outer * count; ++r) {
    const std::int64_t o = r / count, i = k[r % count];
    std::copy_n(x + (o * n + (i < 0 ? i + n : i)) * inner, inner, y + r * inner);
  }
}

}  // namespace onnxfuse::backend
