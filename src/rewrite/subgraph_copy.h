// Copies of an If/Loop/Scan body placed in the enclosing graph: the inlining
// step that inline_control_flow builds on.
//
// A body (ONNX IR.md, "Graphs" and "Names Within a Graph") names its inputs,
// its initializers and its nodes' outputs; every other name it reads comes
// from an enclosing scope, where the same name denotes the same value. A copy
// placed in the enclosing graph therefore binds each body input to a value of
// the enclosing graph, gives every name the body defines a fresh name (so that
// the copies of an unrolled loop do not collide), and leaves the names it
// reads from outside as they are. Nested subgraphs (an If inside a Loop body)
// are copied whole; their reads of the body's names follow the renaming.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "rewrite/name_source.h"

namespace onnxfuse {

/// What one copy of a body adds to the enclosing graph.
struct BodyCopy {
  std::vector<onnx::NodeProto> nodes;            ///< the body's nodes, in its order, renamed
  std::vector<onnx::TensorProto> initializers;   ///< the body's initializers, renamed
  std::vector<std::string> outputs;              ///< each body output's name in the enclosing graph
};

/// Copies `body` with body input i reading `inputs[i]` (a name of the
/// enclosing graph; `inputs` has one entry per body input). Names the body
/// defines become names.Fresh(prefix + name); nodes are named prefix + their
/// name (or "<op_type>_<index>"). A body output that is a body input gives the
/// bound name, one read from outside gives that name.
/// Throws Error(kUnsupported) for a body with sparse initializers, and
/// Error(kInvalidModel) when `inputs` does not match the body's input count.
BodyCopy CopyBody(const onnx::GraphProto& body, const std::vector<std::string>& inputs, const std::string& prefix,
                  NameSource& names, const std::string& node_label);

/// Renames in place what `nodes` read and write, and what their nested
/// subgraphs read from outside, by `rename` (names not in it stay).
void RenameValues(std::vector<onnx::NodeProto>& nodes, const std::map<std::string, std::string>& rename);

}  // namespace onnxfuse
