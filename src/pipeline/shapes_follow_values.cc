#include "pipeline/shapes_follow_values.h"

#include <algorithm>
#include <vector>

#include "rewrite/inline_control_flow.h"

namespace onnxfuse {

bool OutputsFollowValues(const Node& node) {
  return IsControlFlow(node) || (node.domain.empty() && ShapeFollowsElements(node.op_type));
}

bool ShapeFollowsElements(const std::string& op) {
  return op == "NonZero" || op == "NonMaxSuppression" || op == "Compress" || op == "Unique";
}

bool HasControlFlow(const Graph& graph) {
  return std::any_of(graph.nodes().begin(), graph.nodes().end(), IsControlFlow);
}

bool ShapesFollowValues(const Graph& graph) {
  // One mark per value, in node order: its elements depend on the inputs'
  // elements. The inputs' shapes are the signature's, known, so the first
  // node whose output shape reads a marked value decides; Shape and Size
  // read shapes only, so their outputs stay unmarked.
  std::vector<bool> data(graph.values().size(), false);
  for (ValueId v : graph.inputs()) data[v] = true;
  for (const Node& node : graph.nodes()) {
    if (IsControlFlow(node)) return true;
    const std::string& op = node.op_type;
    const bool standard = node.domain.empty();
    bool out_data = false;
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      const ValueId v = node.inputs[slot];
      if (v == kNoValue || !data[v]) continue;
      if (standard && slot < node.num_explicit_inputs && (ShapeFollowsElements(op) || ReadsAsShape(op, slot)))
        return true;
      out_data = true;
    }
    if (standard && (op == "Shape" || op == "Size")) out_data = false;
    for (ValueId v : node.outputs)
      if (v != kNoValue) data[v] = out_data;
  }
  return false;
}

}  // namespace onnxfuse
