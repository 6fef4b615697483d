
#include "backend/lower/core/graph_queries.h"

#include <algorithm>
#include <cmath>

#include "ir/attributes.h"

namespace onnxfuse::backend {

const Node* SoleUser(const Builder& b, ValueId v, const char* op) {
  const Value& value = b.graph.value(v);
  if (value.consumers.size() != 1 || value.is_graph_output) return nullptr;
  const Node& n = b.graph.node(value.consumers[0]);
  return n.op_type == op && n.domain.empty() && !b.absorbed[value.consumers[0]] ? &n : nullptr;
}

ValueId OtherInput(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : kNoValue;
}

bool ConstNear(Builder& b, ValueId v, const Node& user, double want, double tol, double* value) {
  if (v == kNoValue || !b.IsConst(v)) return false;
  const Tensor& t = b.Const(v, user);
  if (t.NumElements() != 1 || t.elem_type != onnx::TensorProto::FLOAT) return false;
  if (value) *value = t.data[0];
  return std::isnan(want) || std::fabs(t.data[0] - want) <= tol;
}

bool ConvReadsAsData(const Builder& b, const Node& n, ValueId v) {
  return n.op_type == "Conv" && n.domain.empty() && n.inputs.size() >= 2 && n.inputs[0] == v &&
         std::count(n.inputs.begin(), n.inputs.end(), v) == 1 && b.IsConst(n.inputs[1]) && AttrInt(n, "group", 1) == 1 &&
         (n.inputs.size() < 3 || n.inputs[2] == kNoValue || b.IsConst(n.inputs[2]));
}

bool IsPooling(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";
}

const Node* PoolReading(const Builder& b, ValueId v) {
  for (NodeId c : b.graph.value(v).consumers) {
    const Node& n = b.graph.node(c);
    if (n.op_type == "GlobalAveragePool" && n.domain.empty() && !b.absorbed[c] && n.inputs[0] == v) return &n;
  }
  return nullptr;
}

}  // namespace onnxfuse::backend
