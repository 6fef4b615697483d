#include "rewrite/subgraph_check.h"

#include <exception>
#include <map>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace onnxfuse {
namespace {

// The outer graph's value types by name; initializers typed from their tensors.
std::map<std::string, onnx::TypeProto> OuterTypes(const onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto> types;
  for (const auto& t : g.initializer()) {
    onnx::TypeProto type;
    auto* tensor = type.mutable_tensor_type();
    tensor->set_elem_type(t.data_type());
    for (auto d : t.dims()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    types[t.name()] = type;
  }
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& v : *list)
      if (v.has_type()) types[v.name()] = v.type();
  return types;
}

bool Typed(const onnx::TypeProto& type) { return type.has_tensor_type() && type.tensor_type().elem_type() != 0; }

// The body as a model of its own, or nothing when it cannot be checked alone.
bool StandAlone(const onnx::ModelProto& model, const onnx::GraphProto& body,
                const std::map<std::string, onnx::TypeProto>& outer, onnx::ModelProto& out) {
  out.set_ir_version(model.ir_version());
  *out.mutable_opset_import() = model.opset_import();
  *out.mutable_graph() = body;
  std::set<std::string> defined;
  for (const auto& v : body.input()) {
    if (!v.has_type() || !Typed(v.type())) return false;
    defined.insert(v.name());
  }
  for (const auto& t : body.initializer()) defined.insert(t.name());
  for (const auto& n : body.node()) {
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size() > 0) return false;
    for (const auto& name : n.input()) {
      if (name.empty() || defined.count(name)) continue;
      auto found = outer.find(name);
      if (found == outer.end() || !Typed(found->second)) return false;
      auto* input = out.mutable_graph()->add_input();
      input->set_name(name);
      *input->mutable_type() = found->second;
      defined.insert(name);
    }
    for (const auto& name : n.output()) defined.insert(name);
  }
  return true;
}

}  // namespace

std::string InvalidBodyReason(const onnx::ModelProto& model, const onnx::NodeProto& node) {
  const auto outer = OuterTypes(model.graph());
  for (const auto& a : node.attribute()) {
    if (!a.has_g()) continue;
    onnx::ModelProto alone;
    if (!StandAlone(model, a.g(), outer, alone)) continue;
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
      onnx::shape_inference::InferShapes(alone, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
      return "its " + a.name() + " fails shape inference: " + message;
    }
  }
  return "";
}

}  // namespace onnxfuse
