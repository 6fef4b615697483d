// Graph edits for graph-level rewrites (see "Rewriting" in src/ir/graph.h).
//
// The model is the one source of truth: an edit changes model() at once, and
// CommitEdits re-derives nodes, values and use-lists from it with the code the
// constructor runs, so a rewritten Graph is exactly the Graph a reload of its
// model would give, without the reload's checks and shape inference.
#include <unordered_set>

#include "onnxfuse/error.h"
#include "ir/graph.h"
#include "ir/names.h"

namespace onnxfuse {

namespace {

// Names the top-level graph defines: graph inputs, initializers and node outputs.
std::unordered_set<std::string> DefinedNames(const onnx::GraphProto& g) {
  std::unordered_set<std::string> names;
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& n : g.node()) names.insert(n.output().begin(), n.output().end());
  return names;
}

// Keeps the items of `field` for which keep(item, index) holds, in order.
template <typename T, typename Keep>
void Filter(google::protobuf::RepeatedPtrField<T>* field, Keep keep) {
  google::protobuf::RepeatedPtrField<T> kept;
  int index = 0;
  for (auto& item : *field)
    if (keep(item, index++)) kept.Add()->Swap(&item);
  field->Swap(&kept);
}

}  // namespace

std::string Graph::NewValueName(const std::string& base) {
  if (taken_names_.empty()) CollectNames(model().graph(), taken_names_);
  return FreshName(base, taken_names_);
}

void Graph::AddInitializer(onnx::TensorProto tensor) {
  onnx::ModelProto& model = MutableModel();
  auto& g = *model.mutable_graph();
  if (model.ir_version() < 4) {  // IR 3 requires every initializer to be a graph input too
    auto* input = g.add_input();
    input->set_name(tensor.name());
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    for (auto d : tensor.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  *g.add_initializer() = std::move(tensor);
}

void Graph::SetNodeInput(NodeId node, std::size_t slot, const std::string& value) {
  auto& proto = *MutableModel().mutable_graph()->mutable_node(static_cast<int>(node));
  Check(slot <= static_cast<std::size_t>(proto.input_size()), "Graph::SetNodeInput: slot past the inputs");
  if (slot == static_cast<std::size_t>(proto.input_size())) proto.add_input(value);
  else proto.set_input(static_cast<int>(slot), value);
}

void Graph::SetNodeOutput(NodeId node, std::size_t slot, const std::string& value) {
  auto& proto = *MutableModel().mutable_graph()->mutable_node(static_cast<int>(node));
  Check(slot < static_cast<std::size_t>(proto.output_size()), "Graph::SetNodeOutput: no such output");
  proto.set_output(static_cast<int>(slot), value);
}

void Graph::RemoveNode(NodeId node) {
  Check(node < num_nodes(), "Graph::RemoveNode: no such node");
  removed_nodes_.insert(node);
}

void Graph::RemoveInitializer(ValueId id) {
  Check(values_.at(id).initializer >= 0, "Graph::RemoveInitializer: '" + values_[id].name + "' is no initializer");
  removed_initializers_.insert(values_[id].name);
}

void Graph::CommitEdits() {
  Check(released_.empty(), "Graph::CommitEdits: an initializer was released");
  Check(borrowed_.empty(), "Graph::CommitEdits: the graph borrows its constants (edit their owner)");
  auto& g = *MutableModel().mutable_graph();
  std::unordered_set<std::string> defined_before;  // from the index: edits have changed the model already
  for (const Value& v : values_)
    if (v.producer != kNoNode || v.initializer >= 0 || v.is_graph_input) defined_before.insert(v.name);
  Filter(g.mutable_node(), [&](const onnx::NodeProto&, int i) { return !removed_nodes_.count(static_cast<NodeId>(i)); });
  auto kept = [&](const auto& item, int) { return !removed_initializers_.count(item.name()); };
  Filter(g.mutable_initializer(), kept);
  Filter(g.mutable_input(), kept);
  const auto defined_after = DefinedNames(g);
  Filter(g.mutable_value_info(), [&](const onnx::ValueInfoProto& vi, int) {
    return !defined_before.count(vi.name()) || defined_after.count(vi.name());
  });
  removed_nodes_.clear();
  removed_initializers_.clear();
  taken_names_.clear();
  Index();
}

}  // namespace onnxfuse
