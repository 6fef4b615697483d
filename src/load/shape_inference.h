// Shapes of a model's values: input shapes pinned, then ONNX shape inference.
// What the loader does after its checks, and what a prepared model at new
// input shapes needs again (shape_model.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Throws what PinInputShapes throws for `input_shapes` on `graph`, and
/// changes nothing.
void CheckInputShapes(const onnx::GraphProto& graph, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                      const std::string& source);

/// Pins graph input shapes (`--input-shape NAME=DIMS`, full shapes by input
/// name). A symbolic dim pinned this way (e.g. "N") takes that value wherever
/// the model's declared types name it (inputs, outputs, value_info), so they
/// agree. Throws Error(kUsage), prefixed with `source`, for a name that is no
/// graph input, a rank the model does not declare, or a dim the model fixes
/// to another value.
void PinInputShapes(onnx::ModelProto& model, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                    const std::string& source);

/// ONNX shape inference over `model`'s graph (onnx::shape_inference::InferShapes:
/// types checked, errors raised, data propagation on, so that Reshape targets
/// computed by Shape -> Gather -> Concat resolve). If/Loop/Scan bodies are
/// kept as they came: inference annotates them with value_info, and they are
/// opaque to onnx-fuse and written back verbatim. Throws what InferShapes
/// throws (a std::exception; the caller names the file).
void InferValueShapes(onnx::ModelProto& model);

}  // namespace onnxfuse
