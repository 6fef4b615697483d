// Which inputs of an ONNX op are read as a shape: their elements, not only
// their dims, decide the op's output dims (ONNX Operators.md, per op).
#pragma once

#include <cstddef>
#include <string>

namespace onnxfuse {

/// True when input `slot` of a node of `op_type` (default domain) gives a
/// shape, a count, bounds, axes or a branch condition: the second input of
/// Reshape, Expand, Tile, TopK, Squeeze, Unsqueeze, Split, ReduceSum, OneHot
/// and Upsample; Slice's starts, ends, axes and steps; Pad's pads and axes;
/// Resize's roi, scales and sizes; ConstantOfShape's input; Range's three;
/// If's condition; Loop's trip count and condition.
bool ReadsAsShape(const std::string& op_type, std::size_t slot);

}  // namespace onnxfuse
