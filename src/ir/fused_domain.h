// The custom domain of fused groups, "ai.onnxfuse", and the rule its calls
// obey. The writer emits such calls (write/onnx_writer.h); the loader checks
// the calls of a model it is given (a fused model may be fused again).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "onnxfuse/error.h"

namespace onnxfuse {

inline constexpr const char* kFusedDomain = "ai.onnxfuse";

/// Every call of an ai.onnxfuse op names a model-local function of that domain
/// and sets only attributes it declares, with the types its body gives them;
/// every ref_attr_name in such a function is declared. Throws Error(kind,
/// prefix + reason) otherwise: kInternal for a model onnx-fuse wrote, kInvalidModel
/// for an input model (the loader checks inputs with it).
void CheckFunctionCalls(const onnx::ModelProto& model, ErrorKind kind, const std::string& prefix);

}  // namespace onnxfuse
