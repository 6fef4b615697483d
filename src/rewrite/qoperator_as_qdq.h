// QLinearConv and QLinearMatMul, the QOperator format of static
// quantization, written as the QDQ form they compute (ONNX Runtime's
// quantizer writes one model in either format; its QDQ transformers fuse the
// second back into the first):
//
//   y = QLinearConv (x, xs, xz, w, ws, wz, ys, yz[, B])
//     = QuantizeLinear (Conv (DequantizeLinear (x, xs, xz),
//                             DequantizeLinear (w, ws, wz, axis 0),
//                             DequantizeLinear (B, xs * ws, 0, axis 0)), ys, yz)
//   y = QLinearMatMul (a, as, az, b, bs, bz, ys, yz)
//     = QuantizeLinear (MatMul (DequantizeLinear (a, as, az),
//                               DequantizeLinear (b, bs, bz[, axis: b's last])), ys, yz)
//
// (ONNX Operators.md, QLinearConv-10: y = saturate(round((x - xz) * (w - wz)
// summed, + B) * xs * ws / ys) + yz). The executable target only: the backend
// then runs every static quantization one way, its float kernels doing the
// products and its fake quantization the rounding (QDQ pairs,
// backend/lower/fused/quantize_dequantize.h); the constant weights' and
// bias's DequantizeLinear fold when the plan is built. A result is the
// QOperator's up to the float rounding of the product: an output within
// float rounding of a rounding boundary may land one step apart. A written
// model keeps the ops as the model wrote them.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

struct QOperatorRewrite {
  std::vector<std::string> rewritten;  ///< node names, in graph order
  /// node name -> why it stays (it runs on the host evaluator, exact):
  /// "x_scale or w_scale is not a constant", "B is not a constant", "a's or y's
  /// parameters are per row".
  std::vector<std::pair<std::string, std::string>> kept;
};

/// Rewrites every default-domain QLinearConv and QLinearMatMul of `graph`'s
/// main graph that it can (the scales that the bias's scale is made of are
/// constants; QLinearMatMul's a and y per tensor, b per tensor or per
/// column) into their QDQ form, and every com.microsoft QOperator
/// (contrib_qoperators.h; com.microsoft's QLinearConv in NCHW as the default
/// domain's); `graph` is then reloaded from its model (shape-inferred;
/// source path and opset conversion kept). Nothing changes when there is
/// none, or when the graph's opset is below 13 (per-axis DequantizeLinear).
/// Throws Error(kUnsupported) naming the node for a com.microsoft one it
/// cannot rewrite (the host evaluator does not run them), and what
/// LoadModelProto throws (a bug here).
QOperatorRewrite ExpressQOperatorsAsQdq(Graph& graph);

}  // namespace onnxfuse
