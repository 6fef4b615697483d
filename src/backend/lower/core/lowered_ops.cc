// The ops LowerGroup dispatches (see lowered_ops.h). Keep in step with
// lower_group.cc's LowerGroup and the predicates it asks.
#include "backend/lower/core/lowered_ops.h"

#include <set>

#include "backend/lower/core/graph_queries.h"
#include "eval/host_eval.h"
#include "backend/lower/ops/std_math.h"

namespace onnxfuse::backend {

bool LowersOp(const std::string& domain, const std::string& op_type) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  static const std::set<std::string> kOps = {
      // Chain anchors (StartsChain) and their post-ops.
      "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "Add", "Sub", "Mul", "Div",
      // EltwiseOf: eltwise_forward steps and post-ops.
      "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Exp", "Abs", "Sqrt", "Neg", "Reciprocal", "Softplus", "Pow",
      "HardSwish", "HardSigmoid", "Clip",
      // LowerView, LowerSlice.
      "Identity", "Dropout", "Cast", "Flatten", "Reshape", "Unsqueeze", "Squeeze", "Shape", "Size", "DepthToSpace",
      "SpaceToDepth", "Transpose", "Pad", "Slice", "Gather", "Split",
      // Ops of their own.
      "Softmax", "LogSoftmax", "Max", "Min", "Sum", "Mean", "Concat", "PRelu", "Resize", "Upsample",
      "LayerNormalization", "InstanceNormalization", "Where",
      // EmitRecurrent (IsRecurrent).
      "LSTM", "GRU", "RNN"};
  Node node;  // what the predicates read of a node: its type, domain and one output
  node.op_type = op_type;
  node.outputs = {0};
  return kOps.count(op_type) > 0 || IsPooling(op_type) || op_type.rfind("Reduce", 0) == 0 || IsStdUnary(node) ||
         eval::HostEvaluable(node);
}

}  // namespace onnxfuse::backend
