#include "ir/fake_quantization.h"

#include <algorithm>

namespace onnxfuse {

std::optional<std::vector<const Node*>> DequantizeReaders(const Graph& graph, const Node& q) {
  if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.outputs.empty()) return std::nullopt;
  const ValueId quantized = q.outputs[0];
  const Value& value = graph.value(quantized);
  if (value.is_graph_output || value.consumers.empty()) return std::nullopt;
  std::vector<const Node*> readers;
  for (NodeId c : value.consumers) {
    const Node& dq = graph.node(c);
    if (dq.op_type != "DequantizeLinear" || !dq.domain.empty() || dq.inputs.at(0) != quantized) return std::nullopt;
    if (std::find(readers.begin(), readers.end(), &dq) == readers.end()) readers.push_back(&dq);
  }
  return readers;
}

bool HasFakeQuantization(const Graph& graph) {
  const auto& nodes = graph.nodes();
  return std::any_of(nodes.begin(), nodes.end(), [&](const Node& n) { return DequantizeReaders(graph, n).has_value(); });
}

}  // namespace onnxfuse
