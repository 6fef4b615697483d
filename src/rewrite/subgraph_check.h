// subgraph_check: whether an If/Loop/Scan body is invalid on its own.
//
// onnx 1.12's shape inference of a whole model does not report errors inside
// bodies: a Scan body whose OneHot reads a scalar index (ONNX Operators.md,
// OneHot: "indices ... of rank >= 1") loads, and shows only once the pass of
// inline_control_flow.h has copied the body into the main graph, where the
// reload fails. This check tells that case (the user's model is invalid) from
// an expansion that went wrong (a bug of the pass).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Runs ONNX shape inference with type checks over each graph attribute of
/// `node` (a node of `model`'s main graph) as a model of its own: the body's
/// inputs, plus the outer-scope values its nodes read, typed as `model` types
/// them (graph inputs, value_info, outputs, initializers). Returns "" when
/// every body passes, and also when a body cannot be checked alone (a body
/// input or an outer value without a tensor element type, or a nested
/// subgraph); else one line: "its body fails shape inference: <onnx's message>".
std::string InvalidBodyReason(const onnx::ModelProto& model, const onnx::NodeProto& node);

}  // namespace onnxfuse
