// What a session checks of the tensors a caller passes to Run, and the graph's
// inputs and outputs as the public ValueInfo.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxfuse/session.h"

namespace onnxfuse::session {

/// A value of `graph` as ValueInfo: its ONNX element type, dims (-1 where not
/// fixed) and the dims' symbols.
ValueInfo ValueInfoOf(const Graph& graph, ValueId id);

/// The shapes of a call, one per graph input in model order: the key of a
/// compiled schedule.
using ShapeSignature = std::vector<std::vector<std::int64_t>>;

/// Checks `shapes` (input name -> shape) against `inputs` and returns them in
/// model order. Throws Error(kUsage) naming the input: a name that is no graph
/// input (listing the inputs), a missing input, a negative dim, a rank other
/// than the declared one, a fixed dim of another value, a symbol taking two
/// values (naming both inputs).
ShapeSignature CheckShapes(const std::vector<ValueInfo>& inputs,
                           const std::map<std::string, std::vector<std::int64_t>>& shapes);

/// CheckShapes on the views' shapes, and each view's dtype against its input's
/// element type and its data pointer (non-null unless it has no elements):
/// Error(kUsage) naming the input.
ShapeSignature CheckInputs(const std::vector<ValueInfo>& inputs, const NamedInputs& views);

/// "[1,3,224,224]"; symbols by name ("[batch,3,224,224]"), "?" for anonymous unknown dims.
std::string ShapeText(const std::vector<std::int64_t>& dims, const std::vector<std::string>& symbols = {});

}  // namespace onnxfuse::session
