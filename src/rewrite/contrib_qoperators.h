// ONNX Runtime's quantized com.microsoft operators, which its static
// quantizer writes in the QOperator format (onnxruntime/docs/
// ContribOperators.md), written as the QDQ form that their definitions
// state: the quantized inputs through DequantizeLinear, the float operator,
// the result through QuantizeLinear.
//
//   QLinearAdd (A, As, Az, B, Bs, Bz, Cs, Cz)   Add         "C = (As (A - Az) + Bs (B - Bz)) / Cs + Cz"
//   QLinearMul (same inputs)                    Mul         "C = (A - Az)(B - Bz) As Bs / Cs + Cz"
//   QLinearSigmoid (X, Xs, Xz, Ys, Yz)          Sigmoid     "quantize(Sigmoid(dequantize(x)))"
//   QLinearLeakyRelu (same, alpha)              LeakyRelu
//   QLinearGlobalAveragePool (same)             GlobalAveragePool
//   QLinearAveragePool (same, pooling attrs)    AveragePool "Dequantize(Input) -> AveragePool -> Quantize"
//   QLinearConcat (Ys, Yz, (X, Xs, Xz)...)      Concat
//   QGemm (A, as, az, B, bs, bz[, C[, ys, yz]]) Gemm        Y = alpha as bs ((A - az)(B - bz) + C),
//                                                           quantized when ys is given, float otherwise
//   QuantizeLinear, DequantizeLinear            the default domain's ops of the same definition
//
// An absent zero point is 0 (of the inputs' 8-bit type). Optional channels_last
// (NHWC) forms are not rewritten. Like the default domain's QLinearConv
// (qoperator_as_qdq.h), the executable target only: the backend then runs
// them as every QDQ model, an output within float rounding of a rounding
// boundary landing one step from ONNX Runtime's integer kernels.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "rewrite/qdq_writer.h"

namespace onnxfuse {

/// Element types of values that ONNX's shape inference does not type
/// (the outputs of com.microsoft ops), as the rewrite learns them.
using ElementTypes = std::map<std::string, std::int32_t>;

/// Whether `node` is one of the com.microsoft ops above.
bool IsContribQOperator(const Node& node);

/// Writes com.microsoft node `node` (`graph`'s, as `proto`) as its QDQ form
/// through `writer`, recording its output's element type in `types`.
/// Returns "" when written, else why it cannot be (nothing written): "a_scale
/// is not a constant", "channels_last (NHWC) is not rewritten", ...
std::string ContribQOperatorAsQdq(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& writer,
                                  ElementTypes& types);

}  // namespace onnxfuse
