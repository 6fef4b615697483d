// Elementwise math through the C++ standard library (backend/lower/ops/std_math.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// True for the elementwise math ops EmitStdUnary lowers: Erf, Log, the
/// trigonometric and hyperbolic functions and their inverses, Floor, Ceil,
/// Round, Sign, Softsign, ThresholdedRelu, Selu, Shrink, Celu.
bool IsStdUnary(const Node& node);
/// One of those as a parallel loop of the standard library's function over a
/// plain buffer: oneDNN 2.6 has none of them but Log, and its eltwise_log is
/// off by 1.4e-6 at log(1) (ONNX node test test_log_example wants 0 within
/// 1e-7), so Log is no post-op either.
void EmitStdUnary(Builder& b, NodeId node);
/// Pow(X, Y) whose Y is a constant of several values (a scalar Y is an
/// eltwise_pow, EltwiseOf): Y broadcast to X's shape at build time, then a
/// parallel loop of std::pow over a plain buffer. When Y is computed at run
/// time, X is a constant, or Y broadcasts X to a larger shape: one loop over
/// the output Z (dims: X's and Y's broadcast, ONNX multidirectional
/// broadcasting) reading both operands plain. Error(kInvalidModel) when the
/// dims do not broadcast; Error(kUnsupported) for a non-float32 constant.
void EmitPow(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
