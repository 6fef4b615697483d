// Elementwise activations (backend/lower/ops/eltwise.cc): the oneDNN eltwise
// algorithms a unary node maps to, as post-ops or as primitives of their own,
// and PRelu.
#pragma once

#include <vector>

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Eltwise algorithm of a unary node (Relu, Sigmoid, Tanh, Clip, ...): the
/// post-ops it lowers to, empty when the node is not a supported elementwise op.
std::vector<PostOp> EltwiseOf(Builder& b, const Node& node);
/// A node EltwiseOf maps as eltwise_forward primitives on the layout of its
/// input (one per post-op: HardSigmoid is two); fused, in place over x when
/// nothing reads it later.
void EmitEltwise(Builder& b, NodeId node);
/// PRelu as prelu_forward (slope broadcast to the input's rank).
void EmitPrelu(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
