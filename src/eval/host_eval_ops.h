// The op families of the host evaluator (host_eval.h), one unit each, and
// the helpers they share. Private to eval/: EvalOnHost is the entry.
//
// Every family function takes the node, its inputs (nullptr for an omitted
// optional input) and the model's opset, and returns std::nullopt for an op
// it does not own, so that the dispatcher can ask each family in turn.
// Storage follows host_eval.h: FLOAT tensors hold float, float16 and double
// values; INT64 tensors hold bool and every integer type.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse::eval {

using HostInputs = std::vector<const Tensor*>;
using HostOutputs = std::optional<std::vector<Tensor>>;

/// `t` as an op's one output, moved in (a braced list would copy it).
inline std::vector<Tensor> One(Tensor t) {
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(t));
  return outputs;
}

/// `axis` in [-rank, rank) made non-negative (rank 0 accepts 0 and -1).
/// Throws Error(kInvalidModel) naming the node when out of range.
std::int64_t NormAxis(std::int64_t axis, std::size_t rank, const Node& node);

/// Input i, which must be present: Error(kInvalidModel) "missing input i" otherwise.
const Tensor& NeedInput(const Node& node, const HostInputs& in, std::size_t i);

/// Throws Error(kInvalidModel) "<node label>: <why>".
[[noreturn]] void InvalidNode(const Node& node, const std::string& why);

/// Every Reduce* (host_eval_reduce.cc).
HostOutputs EvalReduceOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// ArgMax, ArgMin, TopK, Hardmax, Softmax, LogSoftmax, CumSum, Trilu: ops
/// along one axis or over the last two (host_eval_axis.cc).
HostOutputs EvalAxisOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot,
/// Compress, ReverseSequence, NonZero: ops that move elements by index
/// tensors (host_eval_index.cc).
HostOutputs EvalIndexOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// Elementwise activations and functions, IsNaN, IsInf, Mod, BitShift, Xor,
/// Sum, Mean, Clip (host_eval_math.cc).
HostOutputs EvalMathOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// LpNormalization, MeanVarianceNormalization, Shape, Size, EyeLike, Det:
/// ops over whole tensors (host_eval_tensor.cc).
HostOutputs EvalTensorOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// NonMaxSuppression (host_eval_detection.cc).
HostOutputs EvalDetectionOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// Unique (host_eval_unique.cc).
HostOutputs EvalUniqueOp(const Node& node, const HostInputs& in, std::int64_t opset);

/// Einsum in its general form (host_eval_einsum.cc).
HostOutputs EvalEinsum(const Node& node, const HostInputs& in, std::int64_t opset);

/// MatMul (host_eval_matmul.cc).
HostOutputs EvalMatMul(const Node& node, const HostInputs& in, std::int64_t opset);
/// MatMul-13 of two tensors of one storage type (host_eval_matmul.cc); `node`
/// names errors.
Tensor MatMulOf(const Node& node, const Tensor& a, const Tensor& b);

/// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
/// QLinearMatMul, ConvInteger, QLinearConv (host_eval_quantize.cc).
HostOutputs EvalQuantizeOp(const Node& node, const HostInputs& in, std::int64_t opset);

}  // namespace onnxfuse::eval
