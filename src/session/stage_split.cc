#include "session/stage_split.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <set>
#include <utility>

#include "ir/tensor_io.h"
#include "load/onnx_guards.h"
#include "load/shape_inference.h"
#include "onnxfuse/error.h"
#include "rewrite/inline_control_flow.h"

namespace onnxfuse::session {

namespace {

// An empty float tensor: the compiled kernels refuse them (integer ones run on
// host steps, which take them: a Shape of a scalar is an empty int64 tensor).
bool EmptyFloat(const TensorType& type) {
  return type.NumElements() == std::int64_t{0} && StorageTypeOf(type.elem_type) == onnx::TensorProto::FLOAT;
}

bool Static(const TensorType& type) {
  return type.elem_type != 0 && type.has_shape &&
         std::all_of(type.dims.begin(), type.dims.end(), [](std::int64_t d) { return d >= 0; });
}

// Whether known value `v` (holding `tensor`) enters the stage after `done`
// as a constant: a small tensor that a remaining node reads as a shape.
bool GivenAsConstant(const Graph& graph, const std::vector<bool>& done, ValueId v, const Tensor& tensor) {
  if (tensor.NumElements() > kMaxShapeConstant) return false;
  for (NodeId reader : graph.value(v).consumers) {
    if (done[reader]) continue;
    const Node& node = graph.node(reader);
    for (std::size_t slot = 0; slot < node.num_explicit_inputs && slot < node.inputs.size(); ++slot)
      if (node.inputs[slot] == v && node.domain.empty() && ReadsAsShape(node.op_type, slot)) return true;
  }
  return false;
}

// The known values the nodes not in `done` read, each once, in name order.
std::vector<ValueId> KnownRead(const Graph& graph, const std::vector<bool>& done, const KnownValues& known) {
  std::vector<ValueId> read;
  for (const auto& [name, tensor] : known) {
    const std::optional<ValueId> v = graph.FindValue(name);
    if (!v) continue;
    const auto& readers = graph.value(*v).consumers;
    if (std::any_of(readers.begin(), readers.end(), [&](NodeId n) { return !done[n]; })) read.push_back(*v);
  }
  return read;
}

// `model` without its graph's nodes, inputs, outputs, initializers and value
// types: what a model cut from it starts from.
onnx::ModelProto Header(const onnx::ModelProto& model) {
  onnx::ModelProto header;
  header.set_ir_version(model.ir_version());
  *header.mutable_opset_import() = model.opset_import();
  *header.mutable_functions() = model.functions();
  header.mutable_graph()->set_name(model.graph().name());
  return header;
}

// `done` with the nodes of `host` (empty: none) marked too: the nodes a stage
// never holds, whose reads do not decide one.
std::vector<bool> Skipped(const std::vector<bool>& done, const std::vector<bool>& host) {
  std::vector<bool> skip = done;
  for (std::size_t i = 0; i < host.size() && i < skip.size(); ++i) skip[i] = skip[i] || host[i];
  return skip;
}

}  // namespace

ValueDimsList TypeDims(const Graph& prepared, const Graph& at) {
  ValueDimsList dims(prepared.values().size());
  for (ValueId v = 0; v < dims.size(); ++v) {
    const std::optional<ValueId> there = at.FindValue(prepared.value(v).name);
    if (!there) continue;
    const TensorType& type = at.value(*there).type;
    if (type.has_shape && std::all_of(type.dims.begin(), type.dims.end(), [](std::int64_t d) { return d >= 0; }))
      dims[v] = type.dims;
  }
  return dims;
}

std::vector<bool> NodesFollowingChangedDims(const Graph& graph, const ValueDimsList& before,
                                            const ValueDimsList& after) {
  const std::size_t count = graph.values().size();
  Check(before.size() == count && after.size() == count,
        "NodesFollowingChangedDims: the dims are not of this graph's values");
  // Per value: its dims changed; its elements follow changed dims (only
  // through integer and bool values, the shape arithmetic: a float result
  // that reads one is data, whose own dims are compared).
  std::vector<bool> changed(count, false), follows(count, false);
  for (ValueId v : graph.inputs()) changed[v] = !before[v] || before[v] != after[v];
  std::vector<bool> nodes(graph.num_nodes(), false);
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    const bool standard = node.domain.empty();
    bool reads_changed = false, reads_follows = false, as_shape = false;
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      const ValueId v = node.inputs[slot];
      if (v == kNoValue) continue;
      reads_changed = reads_changed || changed[v];
      reads_follows = reads_follows || follows[v];
      as_shape = as_shape || (follows[v] && standard && slot < node.num_explicit_inputs &&
                              ReadsAsShape(node.op_type, slot));
    }
    const bool measures = standard && (node.op_type == "Shape" || node.op_type == "Size");  // reads dims only
    bool writes = false;
    for (ValueId v : node.outputs) {
      if (v == kNoValue) continue;
      changed[v] = before[v] && after[v] ? before[v] != after[v] : reads_changed || as_shape;
      const bool integer = StorageTypeOf(graph.value(v).type.elem_type) == onnx::TensorProto::INT64;
      follows[v] = integer && (reads_changed || (!measures && reads_follows));
      writes = writes || changed[v] || follows[v];
    }
    nodes[id] = reads_changed || writes || as_shape;
  }
  return nodes;
}

bool ReadsWeights(const Graph& graph, const std::vector<bool>& nodes) {
  for (NodeId id = 0; id < graph.num_nodes() && id < nodes.size(); ++id) {
    if (!nodes[id]) continue;
    for (ValueId v : graph.node(id).inputs)
      if (v != kNoValue && graph.value(v).initializer >= 0 &&
          graph.value(v).type.NumElements() > ShapeModel::kCopiedElements)
        return true;
  }
  return false;
}

bool FollowsDimCheaply(const Node& node) {
  static const std::set<std::string> kOps = {
      // moving data
      "Concat", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Gather", "Identity", "Expand",
      "Tile", "Split", "Cast",
      // shapes, ranges, masks
      "Shape", "Size", "Range", "ConstantOfShape", "Trilu", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "Not", "And", "Or", "Where",
      // arithmetic and attention
      "Add", "Sub", "Mul", "Div", "Neg", "Sqrt", "Pow", "Exp", "Max", "Min", "MatMul", "Softmax", "LogSoftmax"};
  return node.domain.empty() && kOps.count(node.op_type) > 0;
}

std::string StageKey(const Graph& graph, const std::vector<bool>& done, const KnownValues& known,
                     const std::vector<bool>& host) {
  const std::vector<bool> skip = Skipped(done, host);
  std::string key;
  key.reserve(done.size() / 4 + 64);
  for (std::size_t i = 0; i < done.size(); i += 4) {
    int nibble = 0;
    for (std::size_t j = i; j < std::min(i + 4, done.size()); ++j) nibble = nibble * 2 + (done[j] ? 1 : 0);
    key += "0123456789abcdef"[nibble];
  }
  for (ValueId v : KnownRead(graph, skip, known)) {
    const Tensor& t = known.at(graph.value(v).name);
    // Appended piece by piece: a stage is looked up on every call of a
    // staged run, so no temporary strings.
    key += '|';
    key += graph.value(v).name;
    key += ':';
    key += std::to_string(t.DataType());
    key += ':';
    for (std::int64_t d : t.dims) key.append(std::to_string(d)).push_back('x');
    if (GivenAsConstant(graph, skip, v, t)) {
      for (std::int64_t e : t.int_data) key.append(",").append(std::to_string(e));
      for (float e : t.data) {  // bit-exact: scales that differ in the last place are other stages
        std::uint32_t bits = 0;
        std::memcpy(&bits, &e, sizeof bits);
        key.append(",f").append(std::to_string(bits));
      }
    }
  }
  return key;
}

Stage SplitStage(const ShapeModel& shapes, const std::vector<bool>& done, const KnownValues& known,
                 const std::vector<bool>& host) {
  const Graph& graph = shapes.prepared();
  const onnx::ModelProto& stripped = shapes.stripped();
  Check(static_cast<std::size_t>(stripped.graph().node_size()) == graph.num_nodes() && done.size() == graph.num_nodes(),
        "SplitStage: the stripped model and the prepared graph differ");

  // Nodes that cannot be ready yet: control flow, ops whose shapes follow
  // values, the runner's `host` nodes, and every node downstream of one
  // (not-yet-run). Shape inference leaves them out: it costs as much as the
  // nodes it sees.
  std::vector<bool> blocked(graph.num_nodes(), false);
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (done[id]) continue;
    const Node& node = graph.node(id);
    bool b = (id < host.size() && host[id]) || OutputsFollowValues(node);
    for (ValueId v : node.inputs)
      if (!b && v != kNoValue && graph.value(v).producer != kNoNode) b = blocked[graph.value(v).producer];
    blocked[id] = b;
  }

  // The remaining nodes, reading the known values as inputs or constants,
  // and of the stripped model only what they read: its header, functions,
  // and the initializers and static value types of the values they touch.
  onnx::ModelProto model = Header(stripped);
  onnx::GraphProto& g = *model.mutable_graph();
  std::vector<NodeId> remaining;
  std::set<std::string> touched;
  for (NodeId id = 0; id < graph.num_nodes(); ++id)
    if (!done[id] && !blocked[id]) {
      onnx::NodeProto& node = *g.add_node() = stripped.graph().node(static_cast<int>(id));
      node.set_name(graph.node(id).name);  // the loader's name for an unnamed node, not one by its index here
      remaining.push_back(id);
      for (ValueId v : graph.node(id).inputs)
        if (v != kNoValue) touched.insert(graph.value(v).name);
      for (ValueId v : graph.node(id).outputs)
        if (v != kNoValue) touched.insert(graph.value(v).name);
    }
  for (const onnx::TensorProto& init : stripped.graph().initializer())
    if (touched.count(init.name())) *g.add_initializer() = init;
  for (const onnx::ValueInfoProto& info : stripped.graph().value_info())
    if (touched.count(info.name())) *g.add_value_info() = info;
  const std::vector<bool> skip = Skipped(done, host);
  for (ValueId v : KnownRead(graph, skip, known)) {
    const Tensor& t = known.at(graph.value(v).name);
    if (GivenAsConstant(graph, skip, v, t)) {
      Tensor named = t;
      named.name = graph.value(v).name;
      *g.add_initializer() = TensorToProto(named);
    } else {
      *g.add_input() = TensorValueInfo(graph.value(v).name, t.DataType(), &t.dims);
    }
  }
  for (ValueId v : graph.outputs()) {
    const NodeId producer = graph.value(v).producer;
    if (!known.count(graph.value(v).name) && producer != kNoNode && !done[producer] && !blocked[producer])
      *g.add_output() = TensorValueInfo(graph.value(v).name, graph.value(v).type.elem_type, nullptr);
  }

  detail::InstallOnnxInferenceGuards();
  try {
    InferValueShapes(model);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
    throw Error(ErrorKind::kInvalidModel,
                graph.source_path() + ": shape inference failed at the shapes of this run's values: " + message);
  }
  const Graph probe(model, graph.source_path());

  // Ready nodes, in order: a reader of a not-ready node's output is not ready.
  std::vector<bool> ready(probe.num_nodes(), false);
  for (NodeId i = 0; i < probe.num_nodes(); ++i) {
    const Node& node = probe.node(i);
    bool ok = !IsControlFlow(node);
    for (ValueId v : node.inputs) {
      if (!ok || v == kNoValue) continue;
      if (probe.value(v).producer != kNoNode) ok = ready[probe.value(v).producer];
      ok = ok && !EmptyFloat(probe.value(v).type);  // the host evaluator's (staged_model.h)
    }
    for (ValueId v : node.outputs)
      if (ok && v != kNoValue) ok = Static(probe.value(v).type) && !EmptyFloat(probe.value(v).type);
    ready[i] = ok;
  }

  // The stage: ready nodes; the inputs and initializers they read; the values
  // they compute that a node left for later, or the model's outputs, read.
  Stage stage;
  stage.model = Header(model);
  onnx::GraphProto& s = *stage.model.mutable_graph();
  *s.mutable_value_info() = model.graph().value_info();  // the types inference gave
  std::set<std::string> read;
  for (NodeId i = 0; i < probe.num_nodes(); ++i) {
    if (!ready[i]) continue;
    *s.add_node() = model.graph().node(static_cast<int>(i));
    stage.nodes.push_back(remaining[i]);
    for (ValueId v : probe.node(i).inputs)
      if (v != kNoValue) read.insert(probe.value(v).name);
  }
  for (const onnx::ValueInfoProto& input : model.graph().input())
    if (read.count(input.name())) *s.add_input() = input;
  for (const onnx::TensorProto& init : model.graph().initializer())
    if (read.count(init.name())) *s.add_initializer() = init;
  for (const std::string& name : shapes.borrowed())
    if (read.count(name)) stage.borrowed.push_back(name);
  std::vector<bool> in_stage(graph.num_nodes(), false);
  for (NodeId id : stage.nodes) in_stage[id] = true;
  for (NodeId i = 0; i < probe.num_nodes(); ++i) {
    if (!ready[i]) continue;
    for (ValueId v : probe.node(i).outputs) {
      if (v == kNoValue) continue;
      const Value& value = probe.value(v);
      const Value& whole = graph.value(*graph.FindValue(value.name));  // its readers in the whole graph
      const bool later = whole.is_graph_output || std::any_of(whole.consumers.begin(), whole.consumers.end(),
                                                              [&](NodeId reader) { return !in_stage[reader]; });
      if (later) *s.add_output() = TensorValueInfo(value.name, value.type.elem_type, &value.type.dims);
    }
  }
  return stage;
}

}  // namespace onnxfuse::session
