// Evaluation of nodes on host tensors: at build time, of nodes whose inputs
// are all known (constant folding of shape subgraphs: Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, Clip bounds from Constant nodes, weight
// transposes, ...), and at run time as host steps (backend/lower/core/host_step.h: integer
// tensors, ops no oneDNN lowering handles). Plain reference code in double
// precision: small tensors, speed matters little.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse::eval {

/// True for the op types EvalOnHost knows (default domain).
bool HostEvaluable(const Node& node);

/// Evaluates `node` with the given input tensors (nullptr for an omitted
/// optional input), as ONNX Operators.md defines each op at opsets 7-17
/// (every version's attributes; `opset` picks the version).
///
/// Ops: Constant, Identity, Dropout (inference), Cast, CastLike, Gather, Unsqueeze,
/// Squeeze, Concat, Reshape, Flatten, Slice, Transpose, Tile, Expand,
/// ConstantOfShape, Range, Where; Add/Sub/Mul/Div/Pow, Mod, BitShift, Min, Max,
/// Sum, Mean, Clip; comparisons, And, Or, Xor, Not, IsNaN, IsInf; unary math
/// (Sqrt, Neg, Abs, Ceil, Floor, Round, Exp, Log, Reciprocal, Sign, Erf, the
/// trigonometric and hyperbolic functions) and activations (Relu, Sigmoid,
/// Tanh, Softplus, Softsign, Mish, HardSigmoid, HardSwish, Elu, Selu,
/// LeakyRelu, ThresholdedRelu, Celu); every Reduce*; ArgMax, ArgMin, TopK,
/// Hardmax, CumSum, Trilu; GatherElements, GatherND, Scatter,
/// ScatterElements, ScatterND, OneHot, Compress, ReverseSequence, NonZero;
/// LpNormalization, MeanVarianceNormalization, Shape, Size, EyeLike, Det;
/// NonMaxSuppression (host_eval_detection.cc); Unique (host_eval_unique.cc);
/// MatMul (host_eval_matmul.cc); QuantizeLinear, DequantizeLinear,
/// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
/// QLinearConv (host_eval_quantize.cc: exact integer arithmetic, float32
/// scaling as ONNX Runtime's CPU kernels); Softmax, LogSoftmax;
/// Einsum (any subscripts: implicit or explicit output, repeated labels
/// within an operand for diagonals, "..." for broadcast dimensions).
///
/// Split and Pad (host_eval_layout.h); Resize, Upsample, GridSample, MaxPool,
/// MaxUnpool, RoiAlign and LRN (host_eval_sample.h).
///
/// Storage (tensor_io.h, StorageTypeOf): a tensor is FLOAT (`data`) or INT64
/// (`int_data`) whatever its ONNX type. FLOAT holds float, float16 and double
/// values (double therefore at float precision); INT64 holds bool (0/1) and
/// every integer type (uint64 values above INT64_MAX as their two's-complement
/// bits). Arithmetic is in double for floats and in int64 for integers,
/// exactly (Div truncates toward zero; Mod with fmod 0 takes the sign of the
/// divisor). Bool outputs are 0/1. Results come out wide: an int8 Add or a
/// uint8 Sub is not wrapped, a float16 result not rounded, until the caller
/// narrows it to the output's declared type (NarrowTo, host_tensor.h), as a
/// host step and the build-time fold do. Cast and CastLike narrow themselves
/// (CastToElemType).
///
/// Throws Error(kUnsupported) naming the node for an op or attribute it does
/// not handle, Error(kInvalidModel) for inconsistent inputs (an index out of
/// range, an integer division by zero, shapes that do not broadcast).
std::vector<Tensor> EvalOnHost(const Node& node, const std::vector<const Tensor*>& inputs, std::int64_t opset);

/// EvalOnHost of `node` of `graph` at the graph's opset, each output narrowed
/// to the type `graph` declares for it (NarrowTo, host_tensor.h: an int8 Add
/// wraps to 8 bits, a float16 result rounds to half), as a host step narrows
/// it; an output of unknown type, or of one the host cannot hold, is left as
/// computed. Throws what EvalOnHost throws.
std::vector<Tensor> EvalAsDeclared(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs);

/// The values of a quantized ONNX element type (QuantizeLinear's outputs,
/// DequantizeLinear's inputs): {low, high} for INT8, UINT8, INT16, UINT16 and
/// INT32; nullopt for any other type.
std::optional<std::pair<std::int64_t, std::int64_t>> QuantizedRange(std::int32_t data_type);

/// The output of `node`, a Shape or a Size, over a tensor of `dims`, which is
/// all either op reads: Shape-15's dims[start:end] as int64 (start 0, end
/// rank; negative ones count from the rank, both clamped to [0, rank]), or
/// Size's element count as an int64 scalar (ONNX Operators.md).
Tensor ShapeOrSize(const Node& node, const std::vector<std::int64_t>& dims);

/// The dims Reshape-14 gives `in` for the target `shape` (ONNX Operators.md,
/// Reshape: 0 copies the input's dim unless `allowzero`, one -1 takes what
/// is left). Throws Error(kInvalidModel) naming the node when the element
/// counts differ.
std::vector<std::int64_t> ReshapeDims(const Node& node, const std::vector<std::int64_t>& in,
                                      const std::vector<std::int64_t>& shape);

/// Whether a Dropout with these optional inputs (nullptr: omitted) drops
/// elements at random: training_mode true and ratio (default 0.5) not 0
/// (ONNX Operators.md, Dropout-13). Otherwise it is the identity, which is
/// all the runtime does: random dropping is Error(kUnsupported).
bool DropoutDrops(const Tensor* ratio, const Tensor* training_mode);

}  // namespace onnxfuse::eval
