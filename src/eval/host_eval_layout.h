// Host evaluation (host_eval.h) of the ops that move elements without
// arithmetic: Split, Pad, Transpose, Expand and Tile (ONNX Operators.md,
// Split-13 / Split-11 / Split-2, Pad-13 / Pad-11 / Pad-2, Transpose-13,
// Expand-13, Tile-13), for run-time operands (host steps) and build-time
// folding alike.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse::eval {

/// True for the op types EvalLayoutOp knows.
bool IsHostLayoutOp(const std::string& op_type);

/// The outputs of `node` (Split: one per node output; the others: one) from its
/// inputs (nullptr: an omitted optional input), or nullopt for another op.
/// Throws Error(kInvalidModel) naming the node when split sizes do not add up
/// to the axis, pads have the wrong count, reflect pads reach past the
/// input's edge, a perm or repeats has the wrong count; std::invalid_argument
/// when Expand's shape does not broadcast.
std::optional<std::vector<Tensor>> EvalLayoutOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset);

}  // namespace onnxfuse::eval
