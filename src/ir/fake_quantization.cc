#include "ir/fake_quantization.h"

#include <algorithm>

#include "ir/attributes.h"

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

namespace {

// The readers of `v` when every one is a Cast to float and `v` is no graph
// output; nullopt otherwise.
std::optional<std::vector<const Node*>> FloatCasts(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  if (value.is_graph_output) return std::nullopt;
  std::vector<const Node*> casts;
  for (NodeId c : value.consumers) {
    const Node& n = graph.node(c);
    if (n.op_type != "Cast" || !n.domain.empty() || AttrInt(n, "to", 0) != onnx::TensorProto::FLOAT) return std::nullopt;
    casts.push_back(&n);
  }
  return casts;
}

}  // namespace

std::optional<std::pair<std::vector<const Node*>, std::vector<const Node*>>> FloatCastsOfDynamicQuantize(
    const Graph& graph, const Node& q) {
  if (q.op_type != "DynamicQuantizeLinear" || !q.domain.empty() || q.outputs.size() != 3) return std::nullopt;
  auto y = FloatCasts(graph, q.outputs[0]);
  auto z = q.outputs[2] == kNoValue ? std::vector<const Node*>{} : FloatCasts(graph, q.outputs[2]);
  if (!y || y->empty() || !z) return std::nullopt;
  return std::make_pair(std::move(*y), std::move(*z));
}

bool HasFakeQuantization(const Graph& graph) {
  const auto& nodes = graph.nodes();
  return std::any_of(nodes.begin(), nodes.end(), [&](const Node& n) {
    return DequantizeReaders(graph, n).has_value() || FloatCastsOfDynamicQuantize(graph, n).has_value();
  });
}

}  // namespace onnxfuse
