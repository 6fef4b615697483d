// Helpers for tests: small models written inline in ONNX text syntax.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "onnxfuse/graph.h"
#include "onnxfuse/loader.h"

namespace onnxfuse::test {

/// Parses a model in ONNX text syntax (onnx/defs/parser.h). Fails the test on a parse error.
onnx::ModelProto ParseModel(const std::string& text);

/// Parses and loads a model through the real loader (sort, checks, shape inference).
Graph GraphFromText(const std::string& text, const LoadOptions& options = {});

/// The node named `name`; fails the test when absent.
NodeId NodeNamed(const Graph& graph, const std::string& name);

}  // namespace onnxfuse::test
