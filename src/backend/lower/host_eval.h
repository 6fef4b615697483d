// Build-time evaluation of nodes whose inputs are all known (constant folding
// of shape subgraphs: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Clip
// bounds from Constant nodes, weight transposes, ...). Plain reference code on
// host tensors: small tensors only, speed does not matter.
#pragma once

#include <optional>
#include <vector>

#include "onnxfuse/graph.h"
#include "onnxfuse/tensor_io.h"

namespace onnxfuse::backend {

/// True for the op types EvalOnHost knows (default domain).
bool HostEvaluable(const Node& node);

/// Evaluates `node` with the given input tensors (nullptr for an omitted
/// optional input). Constant, Identity, Cast, Gather, Unsqueeze, Squeeze,
/// Concat, Reshape, Flatten, Slice, Transpose, Add/Sub/Mul/Div/Pow, Sqrt, Neg,
/// Abs, Ceil, Floor, Round, Exp, Log, Reciprocal, Relu, Sign, Not, Min, Max,
/// comparisons, And, Or, Where, Tile, Expand, ConstantOfShape, Range, every
/// Reduce* (ONNX Operators.md; shape subgraphs such as torchvision's
/// detection transform, ReduceMax of a Constant), Split and Pad
/// (host_eval_layout.h), Resize, Upsample, GridSample, MaxPool, MaxUnpool,
/// RoiAlign and LRN (host_eval_sample.h). Outputs are FLOAT or INT64
/// tensors. Throws Error(kUnsupported) naming the node for an op or attribute
/// it does not handle, Error(kInvalidModel) for inconsistent inputs.
std::vector<Tensor> EvalOnHost(const Node& node, const std::vector<const Tensor*>& inputs, std::int64_t opset);

/// Whether a Dropout with these optional inputs (nullptr: omitted) drops
/// elements at random: training_mode true and ratio (default 0.5) not 0
/// (ONNX Operators.md, Dropout-13). Otherwise it is the identity, which is
/// all the runtime does: random dropping is Error(kUnsupported).
bool DropoutDrops(const Tensor* ratio, const Tensor* training_mode);

}  // namespace onnxfuse::backend
