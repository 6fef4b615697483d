// Function expansion (see expand_functions.h).
#include "rewrite/expand_functions.h"
#include "rewrite/name_source.h"

#include <map>
#include <optional>
#include <utility>

#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include "onnxfuse/error.h"
#include "load/loader.h"

namespace onnxfuse {

namespace {

const onnx::OpSchema* SchemaAt(const std::string& op_type, std::int64_t opset) {
  return onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset), "");
}

bool IsFunctionOp(const std::string& op_type, std::int64_t opset) {
  const onnx::OpSchema* schema = SchemaAt(op_type, opset);
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

// The function body of `node` at `opset`, or nullopt with `why` set.
std::optional<onnx::FunctionProto> BodyOf(const Graph& graph, const Node& node, std::string& why) {
  const onnx::OpSchema* schema = SchemaAt(node.op_type, graph.opset());
  if (schema->HasFunction()) return *schema->GetFunction();
  std::vector<onnx::TypeProto> input_types;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
    input_types.push_back(node.inputs[i] == kNoValue ? onnx::TypeProto() : TypeProtoFromTensorType(graph.value(node.inputs[i]).type));
  onnx::FunctionBodyBuildContextImpl context(node.proto, input_types);
  onnx::FunctionProto body;
  try {
    if (schema->BuildContextDependentFunction(context, body)) return body;
    why = "ONNX builds no body for it (an input type it does not take?)";
  } catch (const std::exception& e) {
    why = std::string("ONNX's body builder refuses it: ") + e.what();
  }
  return std::nullopt;
}

std::int64_t BodyOpset(const onnx::FunctionProto& body, std::int64_t model_opset) {
  for (const auto& import : body.opset_import())
    if (import.domain().empty() || import.domain() == "ai.onnx") return import.version();
  return model_opset;
}

// The same formal inputs, outputs and attributes (with their defaults): the
// versions of an op in between then differ only in the types they take
// (Where-9 and Where-16: bfloat16), and a body written for one runs as the
// other. A changed signature (Unsqueeze-13's axes input) or default
// (Softmax-13's axis) is a change of meaning.
bool SameSignature(const onnx::OpSchema& a, const onnx::OpSchema& b) {
  auto same_formals = [](const std::vector<onnx::OpSchema::FormalParameter>& x,
                         const std::vector<onnx::OpSchema::FormalParameter>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].GetName() != y[i].GetName() || x[i].GetOption() != y[i].GetOption()) return false;
    return true;
  };
  if (!same_formals(a.inputs(), b.inputs()) || !same_formals(a.outputs(), b.outputs())) return false;
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const auto& [name, attribute] : a.attributes()) {
    auto it = b.attributes().find(name);
    if (it == b.attributes().end() || it->second.type != attribute.type || it->second.required != attribute.required ||
        it->second.default_value.SerializeAsString() != attribute.default_value.SerializeAsString())
      return false;
  }
  return true;
}

// Why the nodes of `nodes` (a body or a subgraph of one) cannot run in place of
// the call, or "": an op of another domain, an op whose version at the model's
// opset differs in meaning from the body's (SameSignature), an op (outside subgraphs) neither lowered nor
// a function op itself.
std::string BodyRefusal(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, std::int64_t body_opset,
                        std::int64_t model_opset, const LoweredOp& lowered, bool top_level) {
  for (const auto& n : nodes) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "its body calls " + n.domain() + "." + n.op_type();
    const onnx::OpSchema* wanted = SchemaAt(n.op_type(), body_opset);
    const onnx::OpSchema* have = SchemaAt(n.op_type(), model_opset);
    if (!wanted || !have || (wanted->SinceVersion() != have->SinceVersion() && !SameSignature(*wanted, *have)))
      return "its body calls " + n.op_type() + " of opset " + std::to_string(body_opset) +
             ", which differs at the model's opset " + std::to_string(model_opset);
    if (top_level && !lowered("", n.op_type()) && !IsFunctionOp(n.op_type(), model_opset))
      return "its body calls " + n.op_type() + ", which the backend does not lower";
    for (const auto& a : n.attribute()) {
      std::vector<const onnx::GraphProto*> subgraphs;
      if (a.has_g()) subgraphs.push_back(&a.g());
      for (const auto& g : a.graphs()) subgraphs.push_back(&g);
      for (const auto* g : subgraphs) {
        std::string why = BodyRefusal(g->node(), body_opset, model_opset, lowered, false);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

// Renames a body's values and substitutes its attribute references, in place.
class Inliner {
 public:
  Inliner(const Node& call, const onnx::OpSchema* schema, const onnx::FunctionProto& body, NameSource& fresh)
      : call_(call), schema_(schema), fresh_(fresh) {
    const auto& in = call.proto.input();
    const auto& out = call.proto.output();
    for (int i = 0; i < body.input_size(); ++i) renamed_[body.input(i)] = i < in.size() ? in[i] : "";
    for (int i = 0; i < body.output_size(); ++i)
      if (i < out.size() && !out[i].empty()) renamed_[body.output(i)] = out[i];
    for (const auto& a : call.proto.attribute()) given_[a.name()] = &a;
  }

  void InlineNode(onnx::NodeProto& n, int index) {
    n.set_name(fresh_.Fresh(call_.name + "/" + (n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name())));
    if (n.domain() == "ai.onnx") n.clear_domain();
    for (auto& v : *n.mutable_input()) v = Rename(v);
    for (auto& v : *n.mutable_output()) v = Rename(v);
    Attributes(*n.mutable_attribute());
  }

 private:
  std::string Rename(const std::string& name) {
    if (name.empty()) return name;
    auto it = renamed_.find(name);
    if (it != renamed_.end()) return it->second;
    return renamed_[name] = fresh_.Fresh(call_.name + "/" + name);
  }

  // A reference takes the call's attribute, else the schema's default (none
  // for a model-local function), else goes (then the body op's own default applies).
  void Attributes(google::protobuf::RepeatedPtrField<onnx::AttributeProto>& attributes) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> kept;
    for (auto& a : attributes) {
      if (!a.ref_attr_name().empty()) {
        const onnx::AttributeProto* value = nullptr;
        if (auto it = given_.find(a.ref_attr_name()); it != given_.end()) value = it->second;
        if (schema_) {
          const auto& declared = schema_->attributes();
          if (auto it = declared.find(a.ref_attr_name()); !value && it != declared.end() &&
                                                          it->second.default_value.type() != onnx::AttributeProto::UNDEFINED)
            value = &it->second.default_value;
        }
        if (!value) continue;
        onnx::AttributeProto substituted = *value;
        substituted.set_name(a.name());
        a = std::move(substituted);
      }
      if (a.has_g()) RenameGraph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) RenameGraph(g);
      *kept.Add() = std::move(a);
    }
    attributes.Swap(&kept);
  }

  void RenameGraph(onnx::GraphProto& g) {
    for (auto& v : *g.mutable_input()) v.set_name(Rename(v.name()));
    for (auto& v : *g.mutable_output()) v.set_name(Rename(v.name()));
    for (auto& v : *g.mutable_value_info()) v.set_name(Rename(v.name()));
    for (auto& t : *g.mutable_initializer()) t.set_name(Rename(t.name()));
    for (auto& t : *g.mutable_sparse_initializer()) t.mutable_values()->set_name(Rename(t.values().name()));
    for (auto& n : *g.mutable_node()) {
      for (auto& v : *n.mutable_input()) v = Rename(v);
      for (auto& v : *n.mutable_output()) v = Rename(v);
      Attributes(*n.mutable_attribute());
    }
  }

  const Node& call_;
  const onnx::OpSchema* schema_;
  NameSource& fresh_;
  std::map<std::string, std::string> renamed_;
  std::map<std::string, const onnx::AttributeProto*> given_;
};

// What one round does with the graph's function ops (by node id): a body
// to inline, or a reason to keep the node.
struct Round {
  std::map<NodeId, onnx::FunctionProto> bodies;
  std::vector<FunctionExpansion::Kept> kept;
};

// Where an inlined node came from: the name of the model's node whose
// expansion (in any round) wrote it.
using Origins = std::map<std::string, std::string>;

// The model-local function `node` calls (its domain and op_type), or null.
const onnx::FunctionProto* LocalFunction(const Graph& graph, const Node& node) {
  for (const onnx::FunctionProto& f : graph.model().functions())
    if (f.domain() == node.domain && f.name() == node.op_type) return &f;
  return nullptr;
}

Round PlanRound(const Graph& graph, const LoweredOp& lowered, const std::map<std::string, std::string>& excluded) {
  Round round;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    std::string why;
    if (auto it = excluded.find(node.name); it != excluded.end()) why = it->second;
    if (const onnx::FunctionProto* local = LocalFunction(graph, node); local && !lowered(node.domain, node.op_type)) {
      // Inlined as written: the loader's ONNX checker has made sure that the
      // function's opset imports agree with the model's.
      if (why.empty()) why = BodyRefusal(local->node(), graph.opset(), graph.opset(), lowered, true);
      if (why.empty()) round.bodies.emplace(id, *local);
      else round.kept.push_back({node.name, node.domain + "." + node.op_type, why});
      continue;
    }
    if (!node.domain.empty() || lowered("", node.op_type) || !IsFunctionOp(node.op_type, graph.opset())) continue;
    std::optional<onnx::FunctionProto> body;
    if (why.empty()) body = BodyOf(graph, node, why);
    if (body) why = BodyRefusal(body->node(), BodyOpset(*body, graph.opset()), graph.opset(), lowered, true);
    if (why.empty()) round.bodies.emplace(id, std::move(*body));
    else round.kept.push_back({node.name, node.op_type, why});
  }
  return round;
}

// Replaces the round's nodes by their bodies and reloads the model into `graph`.
void ApplyRound(Graph& graph, const Round& round, Origins& origins, FunctionExpansion& result) {
  onnx::ModelProto model = graph.model();
  NameSource fresh(model);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    auto found = round.bodies.find(id);
    if (found == round.bodies.end()) {
      *nodes.Add() = model.graph().node(static_cast<int>(id));
      continue;
    }
    const onnx::FunctionProto& body = found->second;
    const std::string origin = origins.count(node.name) ? origins.at(node.name) : node.name;
    Inliner inliner(node, node.domain.empty() ? SchemaAt(node.op_type, graph.opset()) : nullptr, body, fresh);
    for (int i = 0; i < body.node_size(); ++i) {
      onnx::NodeProto* n = nodes.Add();
      *n = body.node(i);
      inliner.InlineNode(*n, i);
      origins[n->name()] = origin;
    }
    result.expanded.push_back({node.name, node.op_type, body.node_size()});
    spdlog::debug("{}: {} expanded into its function body of {} nodes", node.name, node.op_type, body.node_size());
  }
  model.mutable_graph()->mutable_node()->Swap(&nodes);
  Graph expanded = LoadModelProto(std::move(model), graph.source_path());
  expanded.set_conversion(graph.conversion());
  graph = std::move(expanded);
}

// Expands round after round. Returns, by the model's node names, the
// expansions that left a function op behind (kept, or nested too deep), with
// the reason: nothing when the graph holds no such leftover.
std::map<std::string, std::string> ExpandRounds(Graph& graph, const LoweredOp& lowered, int max_rounds,
                                                const std::map<std::string, std::string>& excluded,
                                                FunctionExpansion& result) {
  Origins origins;
  std::map<std::string, std::string> failed;
  for (;;) {
    Round round = PlanRound(graph, lowered, excluded);
    if (result.rounds == max_rounds)
      for (const auto& [id, body] : round.bodies)
        round.kept.push_back({graph.node(id).name, graph.node(id).op_type,
                              "function calls nested deeper than " + std::to_string(max_rounds)});
    for (const auto& k : round.kept)
      if (auto it = origins.find(k.node); it != origins.end())
        failed.emplace(it->second, "its expansion leaves " + k.op_type + " ('" + k.node + "'): " + k.reason);
    result.kept = std::move(round.kept);
    if (result.rounds == max_rounds || round.bodies.empty()) return failed;
    ApplyRound(graph, round, origins, result);
    ++result.rounds;
  }
}

}  // namespace

FunctionExpansion ExpandFunctionOps(Graph& graph, const LoweredOp& lowered, int max_rounds) {
  FunctionExpansion result;
  std::map<std::string, std::string> excluded;
  Round first = PlanRound(graph, lowered, excluded);
  if (first.bodies.empty()) {  // the common case: nothing copied, nothing reloaded
    result.kept = std::move(first.kept);
    return result;
  }
  // A node whose expansion leaves a function op behind is kept whole: a
  // refusal then names the node the model wrote. Each retry excludes more
  // nodes, so this ends.
  const Graph original = graph;
  for (;;) {
    std::map<std::string, std::string> failed = ExpandRounds(graph, lowered, max_rounds, excluded, result);
    if (failed.empty()) break;
    excluded.insert(failed.begin(), failed.end());
    graph = original;
    result = FunctionExpansion{};
  }
  for (const auto& k : result.kept) spdlog::debug("{}: {} kept as it is: {}", k.node, k.op_type, k.reason);
  if (!result.expanded.empty())
    spdlog::info("expanded {} function ops into their ONNX function bodies", result.expanded.size());
  return result;
}

}  // namespace onnxfuse
