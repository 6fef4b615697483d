// Each op's output dims from its input dims, on dims that may be symbols, by
// rules that hold at *every* value of the symbols: what ShapeSubstitution
// (shape_substitution.h) checks a prepared graph's types against.
//
// A rule gives nullopt where the dims agree at some values of the symbols
// only: broadcasting S against 5 (ONNX Broadcasting.md: true at S = 1 or 5),
// a MatMul whose K is S against 8, a Concat along a symbolic axis (S + 3 is
// no dim a type can name).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "load/symbolic_shape_values.h"

namespace onnxfuse {

/// True when every dim is a number (no symbol).
bool AllKnown(const SymbolicDims& dims);

/// The elements of a node's constant integer input `slot`, or nullopt (not
/// a constant, or absent): where a rule reads axes.
using ConstantInts = std::function<std::optional<std::vector<std::int64_t>>(const Node& node, std::size_t slot)>;

/// The output dims of `node` (default domain) from `in` (its explicit
/// inputs' dims, empty for an omitted one) by the rule of its op, or nullopt
/// with `why` set: no rule covers the op, or the rule holds at some values
/// of the symbols only. Covered: elementwise ops with broadcasting; ops whose
/// first output has their first input's dims (unary math, activations, Cast,
/// Softmax, LayerNormalization and BatchNormalization without statistics
/// outputs, Dropout); MatMul (numpy.matmul), Gemm, Transpose, Gather, Shape,
/// Size, Unsqueeze and Squeeze with constant axes, Concat, Flatten,
/// reductions and ArgMax/ArgMin with constant axes (ONNX Operators.md).
std::optional<SymbolicDims> RuleOutputDims(const Node& node, const std::vector<SymbolicDims>& in,
                                           const ConstantInts& ints, std::string* why);

}  // namespace onnxfuse
