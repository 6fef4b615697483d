// Host evaluation (host_eval.h) of the ops that sample an input at computed
// coordinates or over windows: Resize, Upsample and GridSample here
// (host_eval_sample.cc), MaxPool with its Indices output, MaxUnpool, RoiAlign
// and LRN in host_eval_window.h. Plain loops in double precision following
// ONNX Operators.md, for what the oneDNN lowerings do not take (run-time
// scales or sizes, integer inputs, a used Indices output, ops oneDNN 2.6 has
// no primitive for) as host steps, and for build-time folding.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse::eval {

/// True for the op types EvalSampleOp knows: Resize, Upsample, GridSample,
/// MaxPool, MaxUnpool, RoiAlign, LRN.
bool IsHostSampleOp(const std::string& op_type);

/// The outputs of `node` from its inputs (nullptr: an omitted optional input),
/// or nullopt for an op IsHostSampleOp does not list. Shapes and layouts:
///   Resize     X [D0..Dk] -> Y [floor(Di * scales_i) or sizes_i] (any rank; opsets 10, 11, 13)
///   Upsample   X [D0..Dk] -> Y [floor(Di * scales_i)] (opset 7: the scales attribute; 9: input)
///   GridSample X [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in [-1, 1]) -> Y [N, C, Ho, Wo]
///   MaxPool, MaxUnpool, RoiAlign, LRN: see host_eval_window.h.
/// Throws Error(kUnsupported) naming the node for an attribute value it does
/// not implement (Resize antialias or axes, which the loader's down-conversion
/// refuses first; GridSample on other than 4-D input), Error(kInvalidModel)
/// for inconsistent inputs (scales and sizes both given, counts that do not
/// match the rank, unknown mode strings).
std::optional<std::vector<Tensor>> EvalSampleOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset);

/// The inputs whose values determine the output shape of a sample op (Resize:
/// sizes, scales; Upsample-9: scales; MaxUnpool: output_shape; others: none),
/// for naming the one computed at run time when that shape is not known at
/// build time.
std::vector<std::size_t> SampleShapeInputs(const Node& node, std::int64_t opset);

}  // namespace onnxfuse::eval
