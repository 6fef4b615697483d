// How messages name a node: one format for errors, refusals and rejections.
//
//   NodeName    "conv1"                the Graph's name: the NodeProto's, or
//                                      "<op_type>_<index>" for an unnamed node
//   QuotedNode  "'conv1' (Conv)"       a node inside a sentence ("'conv1' (Conv) reads ...")
//   NodeLabel   "node 'conv1' (Conv)"  the same, where the sentence needs the word
//   NodeInFile  "m.onnx: node 'conv1' (Conv)"  an error's subject: the model file, then the node
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnxfuse {

/// The name the Graph gives the node at `index` of its graph (the loader's naming);
/// with index < 0 (unknown), the NodeProto's name as it is.
std::string NodeName(const onnx::NodeProto& node, int index);

std::string QuotedNode(const Node& node);
std::string NodeLabel(const Node& node);
std::string NodeInFile(const Graph& graph, const Node& node);
/// Before a Graph exists: the node at `index` of its graph, named as the Graph will name it.
std::string NodeLabel(const onnx::NodeProto& node, int index = -1);

}  // namespace onnxfuse
