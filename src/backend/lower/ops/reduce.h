// Reductions (backend/lower/ops/reduce.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
/// ReduceSumSquare, ReduceLogSum and ReduceLogSumExp (ONNX Operators.md, Reduce*;
/// axes an attribute, or a constant input for ReduceSum-13 and opset 18) as
/// oneDNN's reduction over a plain buffer (LogSumExp: an eltwise_exp step
/// first; the log of LogSum and LogSumExp a post-op), or, where oneDNN 2.6
/// has only its reference kernel (reduced axes that are not the innermost),
/// our ReduceMiddle (backend/kernels/reduce.h). Reduced axes all of size
/// 1, which oneDNN refuses, are a view or one eltwise step. Error(kUnsupported)
/// for other Reduce* ops and when oneDNN has no implementation.
void EmitReduce(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
