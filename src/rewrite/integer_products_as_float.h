// MatMulInteger and ConvInteger whose int32 result is only cast to float
// (the form ONNX Runtime's quantize_dynamic writes: DynamicQuantizeLinear ->
// MatMulInteger -> Cast -> Mul by x_scale * w_scale), written as the float
// product of the zero-point-shifted values:
//
//   Cast<to = FLOAT> (MatMulInteger (a, b, a_zero_point, b_zero_point))
//     = MatMul (Cast (a) - Cast (a_zero_point), Cast (b) - Cast (b_zero_point))
//   Cast<to = FLOAT> (ConvInteger (x, w, x_zero_point, w_zero_point))
//     = Conv (Cast (x) - Cast (x_zero_point), Cast (w) - Cast (w_zero_point))
//
// (ONNX Operators.md, MatMulInteger-10, ConvInteger-10: the products of the
// shifted values summed in int32; ConvInteger's padding is the zero point,
// 0 once shifted.) Exact while a sum stays within float32's integers (2^24),
// and otherwise within the float rounding the Cast itself applies. A
// constant b or w is shifted here, once, into float weights. The executable
// target only: the backend then runs the products on its float kernels
// instead of integer host loops.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

struct IntegerProductsRewrite {
  std::vector<std::string> rewritten;  ///< MatMulInteger and ConvInteger node names, in graph order
};

/// Rewrites each MatMulInteger and ConvInteger of `graph`'s main graph whose
/// result only a Cast to float reads, and whose zero points are one value (a
///'s, x's) or one per column of b / per output channel of a constant w; the
/// others stay (host evaluator, exact). `graph` is then reloaded from its
/// model (shape-inferred; source path and opset conversion kept). Throws what
/// LoadModelProto throws (a bug here).
IntegerProductsRewrite ExpressIntegerProductsAsFloat(Graph& graph);

}  // namespace onnxfuse
