// Internal to the pattern engine: the named predicates of `#@ require:` lines,
// the conditions a pattern body cannot express.
//
// Arguments name function inputs (the pattern's wildcards), except where a
// predicate says it takes a function attribute. ParsePatterns checks names and
// arguments with ValidateRequirement; MatchPattern evaluates them with
// CheckRequirement once the body has matched structurally. Each failure has a
// stable reason code, the one the report shows:
//
//   constant(X, ...)    every X is an initializer or a Constant node's output
//                       (Graph::IsConstant), or an Identity (chain) of one (a
//                       parameter two layers share). An omitted optional input (Conv
//                       without B) passes: there is nothing to compute at run
//                       time.                                  -> "not_constant"
//   scalar(X, ...)      every X is a constant holding exactly one element
//                       (shape [], [1], [1,1], ...).           -> "not_scalar"
//   same_shape(A, B)    A and B have fully known, equal shapes, so a binary op
//                       on them does not broadcast.            -> "shapes_differ"
//   per_channel(S, X)   S broadcasts against X along axis 1 (channels) only:
//                       right-aligned as numpy broadcasting aligns them, S's
//                       dim at X's axis 1 is C = X.dims[1] (or 1) and every
//                       other dim is 1. [1,C,1,1] and [C,1,1] qualify for an
//                       NCHW X; [C] only for a 2-D X (against NCHW it would
//                       broadcast along W).                    -> "not_per_channel"
//   last_axis(attr, X)  the captured int/ints function attribute `attr` (e.g.
//                       ReduceMean's axes) is [-1] or [rank(X)-1]; absent fails
//                       (ReduceMean without axes reduces all). -> "not_last_axis"
//   kernel_1x1(W)       W (a convolution weight [M, C/group, k1, k2, ...]) has
//                       a known shape of rank >= 3 whose spatial dims are all 1:
//                       a pointwise convolution.               -> "not_1x1"
//   kernel_3x3(W)       W is 4-D [M, C/group, 3, 3].           -> "not_3x3"
//   depthwise(attr, W)  the captured int function attribute `attr` (a Conv's
//                       group) equals W's output channels M and W has one input
//                       channel per group (W [M, 1, ...]): each output channel
//                       reads its own input channel, channel multiplier 1 (what
//                       oneDNN's fused depthwise post-op requires). An absent
//                       group is 1: depthwise only when M = 1.  -> "not_depthwise"
//                       (It names the group attribute, not the conv's input X,
//                       because X is often an intermediate of the pattern.)
//
// Deliberately not predicates:
//   - Inference-mode BatchNormalization. A body BatchNormalization with one
//     output that does not mention training_mode only matches a graph node
//     whose extra outputs are absent (opset < 14 training BN writes running
//     mean/var) and whose training_mode is the schema default 0 (opset >= 14):
//     the matcher's output and attribute rules make both a near-miss.
//   - Constant values (Gelu's sqrt(2), LayerNorm's exponent 2). Write a body
//     node `k = Constant <value = float {1.4142135}> ()`: it matches any graph
//     value that is a constant one-element tensor of the same element type and
//     rank <= max(1, the literal's rank), equal within 1e-4 relative, be it an
//     initializer or a Constant node's output. The Constant is part of the
//     function, so the call does not pass it, and the body stays runnable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "patterns/pattern.h"

namespace onnxfuse::detail {

/// Relative tolerance for a body Constant against a graph constant.
inline constexpr double kConstantTolerance = 1e-4;

/// A requirement that does not hold: reason code, one sentence, offending argument.
struct PredicateFailure {
  std::string reason;
  std::string detail;
  std::size_t arg = 0;  ///< index into PatternRequirement::args
};

/// What CheckRequirement sees of a match.
struct PredicateBindings {
  /// Graph value bound to a function input; kNoValue when omitted (optional input).
  std::function<ValueId(const std::string&)> value;
  /// Captured attribute of a function attribute; nullptr when the graph node does not have it.
  std::function<const onnx::AttributeProto*(const std::string&)> attribute;
};

/// Why `requirement` is not valid for `function` (unknown predicate, wrong argument
/// count, an argument that is not a function input/attribute), with the index of the
/// offending argument (npos: the predicate itself); nullopt when it is valid.
std::optional<std::pair<std::size_t, std::string>> ValidateRequirement(const PatternRequirement& requirement,
                                                                       const onnx::FunctionProto& function);

/// Evaluates a validated requirement on a structural match; nullopt when it holds.
std::optional<PredicateFailure> CheckRequirement(const Graph& graph, const PatternRequirement& requirement,
                                                 const PredicateBindings& bindings);

// Attribute values, compared alike by the matcher and the predicates.

/// Relative tolerance for float attributes: absorbs decimal spellings of one float (1/6 as 0.1666667).
inline constexpr double kAttributeTolerance = 1e-6;
/// a == b, or |a - b| <= tolerance * max(|a|, |b|).
bool Near(double a, double b, double tolerance);
/// The attribute's type; inferred from the field set when `type` is missing (IR < 2 models).
int TypeOf(const onnx::AttributeProto& attr);
/// Same type and value (floats within kAttributeTolerance); names are not compared.
bool AttrEqual(const onnx::AttributeProto& a, const onnx::AttributeProto& b);
/// The value for messages: 2, 0.001, 'SAME_UPPER', [1,1].
std::string AttrText(const onnx::AttributeProto& attr);

/// The number a one-element tensor of type float, double, int32 or int64 holds; nullopt otherwise.
std::optional<double> SingleNumber(const onnx::TensorProto& tensor);

/// A constant graph value holding one number.
struct ConstantNumber {
  double value = 0;
  std::int32_t elem_type = 0;  ///< onnx::TensorProto::DataType
  std::size_t rank = 0;
};
/// The number held by a one-element constant: an initializer, or a Constant node's
/// `value` (float, double, int32, int64) or `value_float`/`value_int`; nullopt otherwise.
std::optional<ConstantNumber> ConstantScalar(const Graph& graph, ValueId value);

}  // namespace onnxfuse::detail
