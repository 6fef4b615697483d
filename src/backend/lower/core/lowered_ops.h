// The default-domain ops the backend lowers as they are (LowerGroup,
// backend/lower/core/lower_group.cc): what function expansion (rewrite/expand_functions.h)
// keeps. A function op listed here (LayerNormalization, HardSwish, Celu,
// Softmax, LogSoftmax, GreaterOrEqual, LessOrEqual, Range; CastLike and
// MeanVarianceNormalization as host steps) keeps its own lowering; one not
// listed (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, ...) is replaced
// by its ONNX function body before fusion.
#pragma once

#include <string>

namespace onnxfuse::backend {

/// True when LowerGroup has a lowering for ops of this type: a oneDNN
/// primitive, one of our kernels, a view, or a host step (HostEvaluable). A
/// lowering may still refuse a node for its attributes or shapes (naming the
/// node); that is not asked here. Other domains: false.
bool LowersOp(const std::string& domain, const std::string& op_type);

}  // namespace onnxfuse::backend
