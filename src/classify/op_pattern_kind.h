// Operator pattern kinds, the lattice TVM's fusion works on.
//
// Source: TVM include/tvm/relay/op_attr_types.h (OpPatternKind) and the
// registrations of Relay's operators (see shared/REFERENCES.md), mapped onto
// ONNX operator names as the ONNX spec (Operators.md) spells them.
#pragma once

#include <string_view>

#include "ir/graph.h"

namespace onnxfuse {

/// TVM's OpPatternKind. Values are TVM's; a larger value is a less fusible kind,
/// and combining kinds along a path takes the maximum.
enum class OpPatternKind : int {
  kElemWise = 0,         ///< out[i] = f(in[i]) on tensors of one shape
  kBroadcast = 1,        ///< elementwise with numpy broadcasting of inputs
  kInjective = 2,        ///< each output element reads one input element (Reshape, Transpose, Concat, ...)
  kCommReduce = 3,       ///< commutative reduction (ReduceSum, ArgMax, ...)
  kOutEWiseFusable = 4,  ///< complex op whose output can take an elementwise epilogue (Conv, Gemm, pooling)
  kTuple = 7,            ///< makes or splits a tuple of tensors
  kOpaque = 8,           ///< anything else: never fused
};

/// "kElemWise", "kBroadcast", ... (TVM's spelling).
std::string_view ToString(OpPatternKind kind);

/// max(a, b) in the lattice (TVM's CombinePattern).
inline OpPatternKind Combine(OpPatternKind a, OpPatternKind b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}
inline bool operator<=(OpPatternKind a, OpPatternKind b) { return static_cast<int>(a) <= static_cast<int>(b); }

/// Kind of a default-domain op by type alone (one table; opaque when not listed).
/// Ops of other domains are always kOpaque.
OpPatternKind KindOfOpType(std::string_view domain, std::string_view op_type);

/// Kind of a node in its graph. Refines the table where attributes matter:
/// BatchNormalization with training_mode=1 is kOpaque (otherwise kElemWise: with
/// constant statistics it is a per-channel affine map that folds into a preceding Conv).
OpPatternKind ClassifyNode(const Graph& graph, NodeId node);

/// Pattern of the dataflow edge from a producer into `consumer` through `value`:
/// the consumer's kind, except that a kBroadcast consumer whose output shape equals
/// the shape of `value` is kElemWise on that edge (TVM IndexedForwardGraph::Creator).
OpPatternKind EdgePattern(const Graph& graph, ValueId value, NodeId consumer, OpPatternKind consumer_kind);

}  // namespace onnxfuse
