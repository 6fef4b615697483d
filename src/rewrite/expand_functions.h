// Function expansion: a default-domain node that the executing backend has no
// lowering for, whose operator ONNX defines as a function, is replaced by that
// function's body (ONNX IR.md "Functions"; the body from
// onnx::OpSchema::GetFunction, or BuildContextDependentFunction with the
// node's attributes and input types). So is a call of a model-local function
// (ONNX IR.md "Functions"; the ai.onnxfuse ops of a model onnx-fuse wrote),
// unless the backend lowers it: then `run`, plan files and InferenceSession
// take a fused model as they take its original, and fuse it again. Used for
// the executable target only: the fused .onnx keeps the operator as the model
// wrote it.
//
// The body is inlined where the node stood:
// - its formal inputs and outputs become the node's values (an omitted
//   optional input: ""; an output the node does not request: a fresh name);
// - every other name in it, in nested subgraphs too (Range's Loop body), gets
//   a fresh name "<node>/<name>" that nothing in the model uses;
// - an attribute that refers to one of the function's (ref_attr_name) takes
//   the node's attribute, else the schema's default, else is dropped (the
//   body op's own default then applies);
// - its nodes are named "<node>/<body node name or op_type>".
// A body that calls function ops itself (SoftmaxCrossEntropyLoss calls
// NegativeLogLikelihoodLoss) is expanded again in the next round, once shape
// inference has typed the values those calls read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// True when the backend executes (domain, op_type) as it is: the nodes the
/// expansion keeps. The backend provides it (backend/lower/core/lowered_ops.h).
using LoweredOp = std::function<bool(const std::string& domain, const std::string& op_type)>;

struct FunctionExpansion {
  struct Expanded {
    std::string node;     ///< the node's name
    std::string op_type;
    int body_nodes = 0;   ///< nodes it was replaced by (before later rounds expanded them)
  };
  /// A default-domain function op the backend does not lower, left as it is.
  struct Kept {
    std::string node;
    std::string op_type;
    std::string reason;  ///< e.g. "its body calls GatherElements, which the backend does not lower"
  };
  std::vector<Expanded> expanded;  ///< in the order of the rounds, then of the nodes
  std::vector<Kept> kept;          ///< of the last round
  int rounds = 0;                  ///< rounds that expanded something
};

/// Expands, in `graph`, every default-domain node for which `lowered` is false
/// and whose operator has a function body at the graph's opset, provided each
/// node of the body is lowered or is itself such a function op, and each
/// default-domain op in the body resolves at the model's opset to the version
/// the body was written for (the body's opset import). Repeats on the result
/// up to `max_rounds` times. When anything was expanded, `graph` is replaced by
/// the reload of the expanded model (LoadModelProto: sorted, checked,
/// shape-inferred; its source path and opset conversion kept); otherwise it is
/// untouched. Throws what LoadModelProto throws for an expanded model it
/// refuses (a bug here, as the bodies are ONNX's own).
FunctionExpansion ExpandFunctionOps(Graph& graph, const LoweredOp& lowered, int max_rounds = 8);

}  // namespace onnxfuse
