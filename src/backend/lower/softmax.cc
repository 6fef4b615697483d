// Softmax as softmax_forward over a plain buffer; LogSoftmax on our own row
// kernel (backend/kernels/log_softmax.h: oneDNN 2.6's logsoftmax gives the
// dominant element a positive log-probability).
#include "backend/lower/softmax.h"

#include <algorithm>
#include <string>

#include "backend/kernels/log_softmax.h"
#include "backend/lower/kernel_operand.h"
#include "backend/lower/unsupported.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

void EmitSoftmax(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const bool log = node.op_type == "LogSoftmax";
  Dims x = b.ActOf(node.inputs.at(0), node).dims;
  auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t axis = AttrInt(node, "axis", b.graph.opset() >= 13 ? -1 : 1);
  if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1))
    throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": axis " +
                                              std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (log) {
    // [outer, n, inner] around the axis; before opset 13 the input coerced to
    // 2-D at the axis (ONNX LogSoftmax-1/11): inner 1.
    const std::int64_t outer = Product(Dims(x.begin(), x.begin() + axis));
    const std::int64_t inner = b.graph.opset() < 13 || x.empty() ? 1 : Product(Dims(x.begin() + axis + 1, x.end()));
    const std::int64_t n = Product(x) / std::max<std::int64_t>(outer * inner, 1);
    std::vector<std::pair<int, Arg>> args;
    const KernelOperand<float> in = FloatKernelOperand(b, node.inputs[0], node, args);
    const Act dst = b.NewAct(x, PlainDesc(x));
    const int dst_arg = static_cast<int>(args.size());
    args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
    CustomKernel kernel = [=](const std::vector<void*>& data) {
      if (n > 0) LogSoftmax(in.Data(data), static_cast<float*>(data[static_cast<std::size_t>(dst_arg)]), outer, n, inner);
    };
    b.EmitCustom("logsoftmax", node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:log_softmax");
    b.SetAct(node.outputs[0], dst);
    return;
  }
  Arg src = b.UsePlain(node.inputs[0], node);
  // Before opset 13, (Log)Softmax normalizes over all of axis.. at once: the
  // input coerced to 2-D [x0*..*x(axis-1), x(axis)*..] (ONNX Softmax-1/11).
  // The buffer is plain, so this is a 2-D view of it.
  dnnl::memory::desc md = src.md;
  int dnnl_axis = static_cast<int>(axis);
  if (b.graph.opset() < 13) {
    const std::int64_t outer = Product(Dims(x.begin(), x.begin() + axis));
    md = PlainDesc({outer, Product(x) / std::max<std::int64_t>(outer, 1)});
    dnnl_axis = 1;
  }
  const Arg view{src.slot, md, src.fixed};
  Act dst = b.NewAct(x, PlainDesc(x));
  const Arg out{dst.slot, md, {}};
  dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md, dnnl_axis);
  auto pd = MakePd<dnnl::softmax_forward::primitive_desc>(b, node, desc, b.Attr());
  b.Emit(pd, "softmax", node.name, {{DNNL_ARG_SRC, view}, {DNNL_ARG_DST, out}}, dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
