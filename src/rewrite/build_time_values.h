// Small values known when the model is built: the conditions of If nodes and
// the trip counts of Loop nodes, which exporters often compute from constants
// and static shapes (torch.jit.script's `if x.shape[0] > 2:` becomes
// Shape -> Gather -> Greater -> If).
//
// Decides which values of the Graph are known from initializers, Constant
// nodes and shapes that shape inference fixed, through a small set of
// operators on tensors of at most kMaxKnownElements elements:
//   Identity, Shape (start/end), Size, Gather (of 1-D data; of a Shape, only
//   the picked dims need be static), Squeeze, Unsqueeze, Reshape (the dims
//   shape inference gave), Concat, Cast, Not, And, Or, Xor, Equal, Less,
//   Greater, LessOrEqual, GreaterOrEqual, Add, Sub, Mul, Div, Neg, Abs, Ceil,
//   Floor, Relu, Min, Max, ReduceProd/ReduceSum/ReduceMin/ReduceMax (of a
//   non-empty tensor).
// The values are computed by the reference evaluator (eval/host_eval.h) as
// ONNX Operators.md defines each op, narrowed to the op's result type:
// integers exactly in int64 (Div truncates toward zero; a division by zero
// stays unknown, for run time), wrapped to their width; bool 0/1; float and
// float16 rounded to their type. The evaluator holds DOUBLE at float
// precision, so a DOUBLE value is known only where float holds it exactly: a
// constant whose elements are floats, and results that select, negate or round
// such elements (Identity, Gather, Concat, Cast, Squeeze, Unsqueeze, Reshape,
// Neg, Abs, Ceil, Floor, Relu, Min, Max, ReduceMin, ReduceMax); a DOUBLE sum,
// product or quotient is unknown.
// KnownTensor gives the elements as doubles: exact for integers up to 2^53,
// which covers dims, indices and trip counts (a larger trip count is refused
// by its caller).
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
