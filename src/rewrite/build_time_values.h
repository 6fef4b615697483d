// Small values known when the model is built: the conditions of If nodes and
// the trip counts of Loop nodes, which exporters often compute from constants
// and static shapes (torch.jit.script's `if x.shape[0] > 2:` becomes
// Shape -> Gather -> Greater -> If).
//
// Evaluates a value of the Graph from initializers, Constant nodes and shapes
// that shape inference fixed, through a small set of operators on tensors of
// at most kMaxKnownElements elements:
//   Identity, Shape (start/end), Size, Gather (axis 0; of a Shape, only the
//   picked dims need be static), Squeeze, Unsqueeze,
//   Reshape, Concat (axis 0), Cast, Not, And, Or, Xor, Equal, Less, Greater,
//   LessOrEqual, GreaterOrEqual, Add, Sub, Mul, Div, Neg, Abs, Ceil, Floor,
//   Relu, Min, Max, ReduceProd/ReduceSum/ReduceMin/ReduceMax (all axes).
// Semantics per ONNX Operators.md; binary ops broadcast a one-element operand
// or take two operands of the same element count (the shapes exporters give
// scalar conditions). Integer Div truncates toward zero as C++ does, which is
// ONNX's Div on integers; Cast to an integer type truncates, to BOOL tests != 0.
// Numbers are held as double: exact for integers up to 2^53, which covers
// dims, indices and trip counts (a larger trip count is refused by its caller).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

inline constexpr std::int64_t kMaxKnownElements = 4096;

/// A tensor known at build time: element type (onnx::TensorProto::DataType),
/// dims and elements in row-major order.
struct KnownTensor {
  std::int32_t elem_type = 0;
  std::vector<std::int64_t> dims;
  std::vector<double> values;
};

/// The value of `value` when the operators above compute it from constants and
/// static shapes, else nullopt (never throws for what it cannot evaluate; a
/// constant whose data is malformed is Error(kInvalidModel) from DecodeTensor).
std::optional<KnownTensor> KnownValue(const Graph& graph, ValueId value);

/// The single element of a known one-element tensor, else nullopt.
std::optional<double> KnownScalar(const Graph& graph, ValueId value);

}  // namespace onnxfuse
