// A node test's data set through InferenceSession (onnxfuse_conformance --session).
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/tensor_io.h"

namespace onnxfuse::conformance {

/// `model` (the node test's model with its bound inputs as initializers)
/// opened as an InferenceSession with the default options, and run once on
/// `fed` (named after the graph inputs, in the runtime's storage types), each
/// passed in the element type the model declares. Returns the outputs in
/// model order. `source` names the test in messages. Throws what the session
/// throws (Error; kUsage for an input the session does not take).
std::vector<Tensor> RunInSession(const onnx::ModelProto& model, const std::string& source,
                                 const std::vector<Tensor>& fed);

}  // namespace onnxfuse::conformance
