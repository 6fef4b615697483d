// Elementwise functions of one quantized activation, quantized again, as a
// table of 256 bytes (as ONNX Runtime runs QLinearSigmoid and
// QLinearLeakyRelu): in a QDQ model
//
//   q -> DequantizeLinear -> [Sigmoid, Mul (x, sigmoid(x)), Relu, Clip, ...] -> QuantizeLinear -> q2
//
// q2 is a function of q alone when every node between the two reads only
// values of that region and scalar constants, so it runs as one pass over
// the 8-bit tensor, q2 = table[q], instead of a dequantize pass, one float
// step per op and a quantize pass (EfficientNet's SiLU: four passes over
// float32). The table is the region evaluated on all 256 values of q by
// the host evaluator, the ONNX definitions the unfused plan runs; where the
// unfused plan's float kernels round a value at a half step the other way,
// the two are one step apart.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// In fused mode with fake quantization, for DequantizeLinear `dq` of the
/// integer activation `q` (an UINT8 or INT8 Act, quantization `q_node`'s):
/// when a region as above follows it, whose QuantizeLinear's readers share
/// one per-tensor quantization (SharedQuantization), emits one "lookup"
/// step writing that QuantizeLinear's integer output, absorbs the region,
/// lowers that output's DequantizeLinear readers (DequantizeForFloatReaders,
/// int8_conv.h) and returns true. Otherwise nothing, false.
bool LowerInt8Lookup(Builder& b, const Node& q_node, const Node& dq);

}  // namespace onnxfuse::backend
