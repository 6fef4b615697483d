// The names a model uses, and fresh ones that avoid them. ONNX requires every
// name a graph defines to be unique across the model, subgraphs included
// (IR.md, "Names Within a Graph"), so a name added by a rewrite or an opset
// adapter avoids all of them.
#pragma once

#include <string>
#include <unordered_set>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Adds to `names` every name `graph` uses: its inputs, outputs, value_info,
/// initializers (sparse ones included), node names, node inputs and outputs,
/// and the same of every subgraph (If/Loop/Scan bodies), recursively.
void CollectNames(const onnx::GraphProto& graph, std::unordered_set<std::string>& names);

/// Adds to `names` the names `node` uses (its name, inputs and outputs) and
/// those of its subgraphs: for the nodes of model-local functions.
void CollectNodeNames(const onnx::NodeProto& node, std::unordered_set<std::string>& names);

/// `base` when `taken` lacks it, else the first of "<base>_<first>",
/// "<base>_<first + 1>", ... that it lacks; the name returned joins `taken`.
std::string FreshName(const std::string& base, std::unordered_set<std::string>& taken, int first = 2);

}  // namespace onnxfuse
