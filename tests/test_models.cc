#include "test_models.h"

#include <stdexcept>

#include <onnx/defs/parser.h>

namespace onnxfuse::test {

const char* const kBasicBlock = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,8,8] x, float[2,2,1,1] w1 = {1.0, 0.5, -0.5, 1.0}, float[2,2,1,1] w2 = {0.5, 0.0, 0.0, 0.5},
     float[2] s = {1.0, 1.0}, float[2] b = {0.0, 0.1}, float[2] m = {0.0, 0.0}, float[2] v = {1.0, 1.0})
    => (float[1,2,8,8] y) {
    r0 = Relu (x)
    c1 = Conv (r0, w1)
    n1 = BatchNormalization (c1, s, b, m, v)
    r1 = Relu (n1)
    c2 = Conv (r1, w2)
    n2 = BatchNormalization (c2, s, b, m, v)
    a = Add (n2, r0)
    y = Relu (a)
  })";

const char* const kDownsampleBlock = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,8,8] x, float[16,8,3,3] w1, float[16,16,3,3] w2, float[16,8,1,1] wd,
       float[16] s, float[16] b, float[16] m, float[16] v) => (float[1,16,4,4] y) {
      c1 = Conv <strides: ints = [2,2], pads: ints = [1,1,1,1]> (x, w1)
      n1 = BatchNormalization (c1, s, b, m, v)
      r1 = Relu (n1)
      c2 = Conv <pads: ints = [1,1,1,1]> (r1, w2)
      n2 = BatchNormalization (c2, s, b, m, v)
      cd = Conv <strides: ints = [2,2]> (x, wd)
      nd = BatchNormalization (cd, s, b, m, v)
      sum = Add (n2, nd)
      y = Relu (sum)
    })";

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
