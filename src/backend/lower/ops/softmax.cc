// Softmax and LogSoftmax on our own row kernels (backend/kernels/softmax.h,
// log_softmax.h: oneDNN 2.6's softmax_forward rounds its exp and sum in
// float, and its logsoftmax gives the dominant element a positive
// log-probability), and the SoftmaxLog pattern (Softmax -> Log) as one
// LogSoftmax row pass.
#include "backend/lower/ops/softmax.h"

#include <algorithm>
#include <string>

#include "backend/kernels/log_softmax.h"
#include "backend/kernels/softmax.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

enum class Rows { kSoftmax, kLogSoftmax, kLogOfSoftmax };

// `node` (Softmax or LogSoftmax) computing `kind` into `out`, over its input
// viewed as [outer, n, inner] around the axis. Before opset 13 the input is
// coerced to 2-D at the axis (ONNX Softmax-1/11, LogSoftmax-1/11): inner 1.
void EmitRows(Builder& b, const Node& node, Rows kind, ValueId out, const std::string& label) {
  const Dims x = b.ActOf(node.inputs.at(0), node).dims;
  const auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t axis = AttrInt(node, "axis", b.graph.opset() >= 13 ? -1 : 1);
  if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1))
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": axis " +
                                              std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const std::int64_t outer = Product(Dims(x.begin(), x.begin() + axis));
  const std::int64_t inner = b.graph.opset() < 13 || x.empty() ? 1 : Product(Dims(x.begin() + axis + 1, x.end()));
  const std::int64_t n = Product(x) / std::max<std::int64_t>(outer * inner, 1);
  std::vector<std::pair<int, Arg>> args;
  const KernelOperand<float> in = FloatKernelOperand(b, node.inputs[0], node, args);
  const Act dst = b.NewAct(x, PlainDesc(x));
  const int dst_arg = static_cast<int>(args.size());
  args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
  CustomKernel kernel = [=](const std::vector<void*>& data) {
    if (n == 0) return;
    float* y = static_cast<float*>(data[static_cast<std::size_t>(dst_arg)]);
    if (kind == Rows::kSoftmax) Softmax(in.Data(data), y, outer, n, inner);
    else LogSoftmax(in.Data(data), y, outer, n, inner,
                    kind == Rows::kLogSoftmax ? LogProbability::kExact : LogProbability::kOfFloatSoftmax);
  };
  const bool log = kind != Rows::kSoftmax;
  b.EmitCustom(log ? "logsoftmax" : "softmax", label, std::move(args), std::move(kernel), dst.md,
               log ? "onnxfuse:log_softmax" : "onnxfuse:softmax");
  b.SetAct(out, dst);
}

}  // namespace

void EmitSoftmax(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  EmitRows(b, node, node.op_type == "LogSoftmax" ? Rows::kLogSoftmax : Rows::kSoftmax, node.outputs[0], node.name);
}

void EmitSoftmaxLog(Builder& b, const Node& softmax, ValueId log_output) {
  EmitRows(b, softmax, Rows::kLogOfSoftmax, log_output, softmax.name + "+Log");
}

}  // namespace onnxfuse::backend
