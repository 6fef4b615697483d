#include "test_models.h"

#include <stdexcept>

#include <onnx/defs/parser.h>

namespace onnxfuse::test {

onnx::ModelProto ParseModel(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) throw std::runtime_error("test model does not parse: " + status.ErrorMessage());
  return model;
}

Graph GraphFromText(const std::string& text, const LoadOptions& options) {
  return LoadModelProto(ParseModel(text), "inline.onnx", options);
}

NodeId NodeNamed(const Graph& graph, const std::string& name) {
  for (NodeId id = 0; id < graph.num_nodes(); ++id)
    if (graph.node(id).name == name) return id;
  throw std::runtime_error("no node named " + name);
}

}  // namespace onnxfuse::test
