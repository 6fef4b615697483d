// Host evaluation of the window ops of the sample family (host_eval_sample.h):
// MaxPool with its Indices output and on integer data, MaxUnpool, RoiAlign and
// LRN. Plain loops in double precision (ONNX Operators.md, MaxPool-12,
// MaxUnpool-11, RoiAlign-16 / RoiAlign-10, LRN-13), as host steps and for
// build-time folding.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse::eval {

/// The window of a pooling or convolution over X [N, C, D1..Dk]: per spatial
/// dim its kernel (as given), strides, dilations, begin pads and output dim,
/// from the node's strides, dilations, pads, auto_pad and ceil_mode (absent:
/// 1, 1, 0, NOTSET, 0) as MaxPool-12 and Conv-11 define them. Throws
/// Error(kInvalidModel) naming the node for attributes that do not match the
/// rank, a kernel larger than the padded input, an unknown auto_pad.
struct WindowGeometry {
  std::vector<std::int64_t> kernel, strides, dilations, pads_begin, out;
};
WindowGeometry WindowGeometryOf(const Node& node, const std::vector<std::int64_t>& x,
                                const std::vector<std::int64_t>& kernel);

/// True for MaxPool, MaxUnpool, RoiAlign and LRN.
bool IsHostWindowOp(const std::string& op_type);

/// The outputs of `node`, or nullopt for another op:
///   MaxPool   X [N, C, D1..Dk] (float or integer) -> Y [N, C, O1..Ok] (X's type), Indices [N, C, O1..Ok]
///             (INT64: flat indices into X, the spatial part row-major for storage_order 0 and
///             column-major for 1; padding is not counted). The first maximum of a window in
///             row-major window order wins. Output dims per MaxPool-12 (kernel_shape, strides,
///             pads, dilations, auto_pad, ceil_mode, where a last window starting in the end
///             padding is dropped, as oneDNN's and PyTorch's pooling).
///   MaxUnpool X [N, C, D1..Dk], I (INT64, X's shape), output_shape (optional) -> Y: zeros of
///             U = [N, C, (Di - 1) * strides_i + kernel_i - pads_begin_i - pads_end_i] with
///             U.flat[I[j]] = X[j]; given output_shape (no dim smaller than U's), U at its origin
///             and zeros after (the ONNX reference implementation).
///   RoiAlign  X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> Y [R, C, oh, ow].
///   LRN       X [N, C, D1..Dk] -> Y (X's shape).
/// Throws Error(kInvalidModel) naming the node for attributes that do not
/// match X's rank, an index outside Y, a batch index outside X, an unknown mode.
std::optional<std::vector<Tensor>> EvalWindowOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset);

}  // namespace onnxfuse::eval
