// DynamicQuantizeLinear whose quantized values are only cast to float (what
// integer_products_as_float.h leaves of ONNX Runtime's quantize_dynamic
// form), written as float ops the backend runs on its kernels instead of a
// host loop per element (ONNX Operators.md, DynamicQuantizeLinear-11):
//
//   low = Min (ReduceMin (x), 0)       high = Max (ReduceMax (x), 0)
//   y_scale = (high - low) / 255, or 1 when high = low (x all zeros: ONNX
//             Runtime's choice where the formula divides 0 by 0)
//   z = Clip (Round (-low / y_scale), 0, 255)                 y_zero_point = z as uint8
//   Cast<to = FLOAT> (y) = Min (Max (Round (x / y_scale), -z), 255 - z) + z
//
// which is saturate(round(x / y_scale) + z) for an integer z; Round ties to
// even, as DynamicQuantizeLinear's rounding. The same values as the host
// evaluator's, float op for float op.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

struct DynamicQuantizeRewrite {
  std::vector<std::string> rewritten;  ///< DynamicQuantizeLinear node names, in graph order
};

/// Rewrites each DynamicQuantizeLinear of `graph`'s main graph whose y only
/// Casts to float read (not a graph output); its Casts go, and its
/// y_zero_point's Casts to float read the float z. `graph` is then reloaded
/// from its model. Throws what LoadModelProto throws (a bug here).
DynamicQuantizeRewrite ExpressDynamicQuantizeAsFloat(Graph& graph);

}  // namespace onnxfuse
