// Whether one schedule can serve a prepared model at every signature of its
// input shapes, or some shape follows the elements of a tensor (a detector's
// boxes, an If decided at run time): then it runs in stages
// (session/staged_model.h), and its plan file stores no schedule. A static
// analysis of the graph, used wherever a prepared model is compiled: `run`,
// the session and the plan-file writer.
#pragma once

#include <cstddef>
#include <string>

#include "ir/graph.h"
#include "ir/shape_inputs.h"  // ReadsAsShape, which its users read with it

namespace onnxfuse {

/// True for ops whose output shapes follow the elements of their inputs,
/// whatever their shapes: NonZero, NonMaxSuppression, Compress, Unique.
bool ShapeFollowsElements(const std::string& op_type);

/// True for a node whose outputs' shapes follow values whatever is known of
/// its inputs' shapes: an If, Loop or Scan, or ShapeFollowsElements. Never
/// in a stage: the runner evaluates it once its inputs are known.
bool OutputsFollowValues(const Node& node);

/// True when an If, Loop or Scan stays in `graph`'s top level.
bool HasControlFlow(const Graph& graph);

/// True when one schedule cannot run `graph` at every signature of its
/// input shapes: an If, Loop or Scan stays in it, or some value's shape
/// depends on the elements of a graph input: NonZero, NonMaxSuppression,
/// Compress or Unique of them, or a node that reads them as a shape
/// (ReadsAsShape), directly or through other ops (not through Shape or
/// Size, whose elements follow shapes only). A static analysis of the
/// graph, the same at every signature.
bool ShapesFollowValues(const Graph& graph);

}  // namespace onnxfuse
