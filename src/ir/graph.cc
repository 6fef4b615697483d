#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "ir/node_label.h"
#include "onnxfuse/error.h"
#include "ir/tensor_data.h"

namespace onnxfuse {

namespace {

std::int64_t ElementSize(std::int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16: case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;  // strings and unknown types have no fixed size
  }
}

// Collects names a graph reads but does not define, recursing into nested subgraphs.
void CollectCaptured(const onnx::GraphProto& graph, std::set<std::string>& defined_outside,
                     std::vector<std::string>& captured) {
  std::set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (name.empty() || defined.count(name) || defined_outside.count(name)) return;
    defined_outside.insert(name);  // report each captured name once
    captured.push_back(name);
  };
  for (const auto& n : graph.node()) {
    for (const auto& i : n.input()) use(i);
    for (const auto& attr : n.attribute()) {
      std::vector<const onnx::GraphProto*> bodies;
      if (attr.has_g()) bodies.push_back(&attr.g());
      for (const auto& g : attr.graphs()) bodies.push_back(&g);
      for (const auto* body : bodies) {
        std::vector<std::string> inner;
        std::set<std::string> seen = defined;  // names this scope defines are not captures
        CollectCaptured(*body, seen, inner);
        for (const auto& name : inner) use(name);
      }
    }
  }
  for (const auto& o : graph.output()) use(o.name());
}

}  // namespace

std::optional<std::int64_t> TensorType::NumElements() const {
  if (!has_shape) return std::nullopt;
  std::int64_t n = 1;
  for (auto d : dims) {
    auto next = CheckedMultiply(n, d);  // a negative (unknown) dim or an overflowing declared shape
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<std::int64_t> TensorType::SizeInBytes() const {
  auto n = NumElements();
  auto size = ElementSize(elem_type);
  if (!n || size == 0) return std::nullopt;
  return CheckedMultiply(*n, size);
}

std::string TensorType::ShapeString() const {
  if (!has_shape) return "[?]";
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out << ',';
    if (dims[i] >= 0) out << dims[i];
    else out << (i < dim_params.size() && !dim_params[i].empty() ? dim_params[i] : "?");
  }
  out << ']';
  return out.str();
}

bool TensorType::SameShape(const TensorType& other) const {
  if (!has_shape || !other.has_shape || dims != other.dims) return false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) continue;
    const std::string& symbol = i < dim_params.size() ? dim_params[i] : std::string();
    if (symbol.empty() || i >= other.dim_params.size() || other.dim_params[i] != symbol) return false;
  }
  return true;
}

TensorType TensorTypeFromProto(const onnx::TypeProto& type) {
  TensorType t;
  if (!type.has_tensor_type()) return t;
  t.elem_type = type.tensor_type().elem_type();
  if (!type.tensor_type().has_shape()) return t;
  t.has_shape = true;
  for (const auto& dim : type.tensor_type().shape().dim()) {
    t.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    t.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return t;
}

onnx::TypeProto TypeProtoFromTensorType(const TensorType& t) {
  onnx::TypeProto type;
  if (t.elem_type == 0) return type;  // unknown: no type
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(t.elem_type);
  if (!t.has_shape) return type;
  auto* shape = tensor->mutable_shape();
  for (std::size_t d = 0; d < t.dims.size(); ++d) {
    auto* dim = shape->add_dim();
    if (t.dims[d] >= 0) dim->set_dim_value(t.dims[d]);
    else if (d < t.dim_params.size() && !t.dim_params[d].empty()) dim->set_dim_param(t.dim_params[d]);
  }
  return type;
}

std::vector<std::string> CapturedNames(const onnx::NodeProto& node) {
  std::vector<std::string> captured;
  std::set<std::string> seen;
  for (const auto& attr : node.attribute()) {
    std::vector<const onnx::GraphProto*> bodies;
    if (attr.has_g()) bodies.push_back(&attr.g());
    for (const auto& g : attr.graphs()) bodies.push_back(&g);
    for (const auto* body : bodies) CollectCaptured(*body, seen, captured);
  }
  return captured;
}

ValueId Graph::InternValue(const std::string& name, std::unordered_map<std::string, ValueId>& by_name) {
  auto [it, inserted] = by_name.emplace(name, static_cast<ValueId>(values_.size()));
  if (inserted) values_.push_back(Value{name, {}, kNoNode, {}, false, false, -1});
  return it->second;
}

Graph::Graph(onnx::ModelProto model, std::string source_path)
    : model_(std::make_shared<onnx::ModelProto>(std::move(model))), source_path_(std::move(source_path)) {
  for (const auto& opset : model_->opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
  Index();
}

void Graph::Index() {
  std::vector<Node> nodes;
  std::unordered_map<std::string, ValueId> by_name;
  values_.clear();
  inputs_.clear();
  outputs_.clear();
  const auto& g = model_->graph();
  auto where = [&](const std::string& what) { return source_path_ + ": " + what; };

  for (int i = 0; i < g.initializer_size(); ++i) {
    ValueId v = InternValue(g.initializer(i).name(), by_name);
    values_[v].initializer = i;
    auto& type = values_[v].type;
    type.elem_type = g.initializer(i).data_type();
    type.has_shape = true;
    type.dims.assign(g.initializer(i).dims().begin(), g.initializer(i).dims().end());
    type.dim_params.assign(type.dims.size(), "");
  }
  for (const auto& input : g.input()) {
    ValueId v = InternValue(input.name(), by_name);
    values_[v].is_graph_input = true;
    if (values_[v].initializer < 0) {
      values_[v].type = TensorTypeFromProto(input.type());
      inputs_.push_back(v);
    }
  }

  // value_info holds the shapes inferred before construction.
  std::unordered_map<std::string, const onnx::TypeProto*> inferred;
  for (const auto& vi : g.value_info()) inferred[vi.name()] = &vi.type();
  for (const auto& vi : g.output()) inferred[vi.name()] = &vi.type();

  nodes.reserve(static_cast<std::size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& proto = g.node(i);
    NodeId id = static_cast<NodeId>(nodes.size());
    Node node;
    node.op_type = proto.op_type();
    node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
    node.name = NodeName(proto, i);
    auto use = [&](const std::string& name) {
      if (name.empty()) return kNoValue;
      auto found = by_name.find(name);
      if (found == by_name.end() ||
          (values_[found->second].producer == kNoNode && !values_[found->second].is_graph_input &&
           values_[found->second].initializer < 0))
        throw Error(ErrorKind::kInvalidModel,
                    where(NodeLabel(node) + " reads '" + name +
                          "', which no node, graph input or initializer defines"));
      values_[found->second].consumers.push_back(id);
      return found->second;
    };
    for (const auto& name : proto.input()) node.inputs.push_back(use(name));
    node.num_explicit_inputs = node.inputs.size();
    for (const auto& name : CapturedNames(proto)) node.inputs.push_back(use(name));
    for (const auto& name : proto.output()) {
      if (name.empty()) {
        node.outputs.push_back(kNoValue);
        continue;
      }
      ValueId v = InternValue(name, by_name);
      Value& value = values_[v];
      if (value.producer != kNoNode || value.is_graph_input || value.initializer >= 0)
        throw Error(ErrorKind::kInvalidModel,
                    where(NodeLabel(node) + " writes '" + name +
                          "', which is already defined" +
                          (value.producer != kNoNode ? " by node '" + nodes[value.producer].name + "'"
                                                     : " as a graph input or initializer")));
      value.producer = id;
      if (auto it = inferred.find(name); it != inferred.end()) value.type = TensorTypeFromProto(*it->second);
      node.outputs.push_back(v);
    }
    node.proto = proto;
    nodes.push_back(std::move(node));
  }
  nodes_ = std::make_shared<const std::vector<Node>>(std::move(nodes));

  for (const auto& output : g.output()) {
    auto found = by_name.find(output.name());
    if (found == by_name.end())
      throw Error(ErrorKind::kInvalidModel, where("graph output '" + output.name() + "' is never defined"));
    values_[found->second].is_graph_output = true;
    outputs_.push_back(found->second);
  }
  value_by_name_ = std::make_shared<const std::unordered_map<std::string, ValueId>>(std::move(by_name));
}

Graph Graph::Retyped(std::shared_ptr<const Graph> base,
                     const std::vector<std::optional<std::vector<std::int64_t>>>& dims) {
  Check(dims.size() == base->values_.size(), "Graph::Retyped: dims for another graph");
  Graph graph = *base;
  graph.typed_model_ = std::make_shared<TypedModel>();
  for (ValueId v = 0; v < graph.values_.size(); ++v) {
    Value& value = graph.values_[v];
    if (!dims[v] || value.initializer >= 0) continue;
    value.type.has_shape = true;
    value.type.dims = *dims[v];
    value.type.dim_params.assign(dims[v]->size(), "");
  }
  std::vector<std::string> initializers;
  for (ValueId v = 0; v < graph.values_.size(); ++v)
    if (graph.values_[v].initializer >= 0 && !graph.released_.count(v)) initializers.push_back(graph.values_[v].name);
  graph.borrowed_.clear();
  graph.BorrowConstants(std::move(base), initializers);
  return graph;
}

const onnx::ModelProto& Graph::model() const {
  if (!typed_model_) return *model_;
  std::call_once(typed_model_->made, [this] {
    auto typed = std::make_unique<onnx::ModelProto>(*model_);
    onnx::GraphProto& g = *typed->mutable_graph();
    for (auto* list : {g.mutable_input(), g.mutable_output()})
      for (onnx::ValueInfoProto& info : *list)
        if (auto v = FindValue(info.name()); v && values_[*v].initializer < 0 && values_[*v].type.elem_type != 0)
          *info.mutable_type() = TypeProtoFromTensorType(values_[*v].type);
    g.clear_value_info();
    for (const Value& value : values_) {
      if (value.is_graph_input || value.is_graph_output || value.initializer >= 0 || value.type.elem_type == 0) continue;
      onnx::ValueInfoProto& info = *g.add_value_info();
      info.set_name(value.name);
      *info.mutable_type() = TypeProtoFromTensorType(value.type);
    }
    typed_model_->model = std::move(typed);
  });
  return *typed_model_->model;
}

onnx::ModelProto& Graph::MutableModel() {
  if (typed_model_) {
    model_ = std::make_shared<onnx::ModelProto>(model());
    typed_model_.reset();
  } else if (model_.use_count() > 1) {
    model_ = std::make_shared<onnx::ModelProto>(*model_);
  }
  return *model_;
}

std::optional<ValueId> Graph::FindValue(const std::string& name) const {
  auto it = value_by_name_->find(name);
  if (it == value_by_name_->end()) return std::nullopt;
  return it->second;
}

bool Graph::IsConstant(ValueId id) const {
  const Value& v = values_.at(id);
  // An initializer also listed as a graph input could in principle be overridden at run
  // time, but IR < 4 requires every initializer to be listed so; like ORT's fusions we
  // treat all initializers as constants.
  if (v.initializer >= 0) return true;
  return v.producer != kNoNode && node(v.producer).op_type == "Constant" && node(v.producer).domain.empty();
}

const onnx::TensorProto* Graph::ConstantTensor(ValueId id) const {
  if (!IsConstant(id) || IsReleased(id)) return nullptr;
  const Value& v = values_[id];
  if (auto it = borrowed_.find(id); it != borrowed_.end()) return it->second;
  if (v.initializer >= 0) return &model_->graph().initializer(v.initializer);
  for (const auto& attr : node(v.producer).proto.attribute())
    if (attr.name() == "value" && attr.has_t()) return &attr.t();
  return nullptr;
}

void Graph::BorrowConstants(std::shared_ptr<const Graph> owner, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const std::optional<ValueId> here = FindValue(name), there = owner->FindValue(name);
    const onnx::TensorProto* data = there ? owner->ConstantTensor(*there) : nullptr;
    if (!here || values_[*here].initializer < 0 || !there || owner->value(*there).initializer < 0 || !data)
      throw Error(ErrorKind::kInvalidModel,
                  source_path_ + ": initializer '" + name + "' cannot be shared: not an initializer of both graphs");
    borrowed_[*here] = data;
  }
  constants_owner_ = std::move(owner);
}

void Graph::ReleaseInitializer(ValueId id) {
  const Value& v = values_.at(id);
  if (v.initializer < 0) return;
  if (borrowed_.erase(id) > 0) {  // the owner's data stays; this graph stops reading it
    released_.insert(id);
    return;
  }
  if (model_.use_count() > 1 || typed_model_) {  // another graph reads this data: it stays
    released_.insert(id);
    return;
  }
  onnx::TensorProto& t = *model_->mutable_graph()->mutable_initializer(v.initializer);
  onnx::TensorProto stub;  // swap the data out so its memory is freed now, not at the next reuse
  stub.set_name(t.name());
  stub.set_data_type(t.data_type());
  *stub.mutable_dims() = t.dims();
  t.Swap(&stub);
  released_.insert(id);
}

std::vector<NodeId> Graph::Consumers(NodeId id) const {
  std::vector<NodeId> result;
  for (ValueId out : node(id).outputs) {
    if (out == kNoValue) continue;
    result.insert(result.end(), values_[out].consumers.begin(), values_[out].consumers.end());
  }
  // Sort then unique: linear-time dedup per consumer, not quadratic on wide fan-outs.
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

}  // namespace onnxfuse
