#include "write/function_builder.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "onnxfuse/error.h"
#include "write/onnx_writer.h"

namespace onnxfuse::detail {

namespace {

// One group with its values renamed by position (see the header).
struct CanonicalGroup {
  std::vector<onnx::NodeProto> body;
  std::size_t num_inputs = 0, num_outputs = 0;
  std::string key;  ///< structure key: equal keys share one function
};

bool HasSubgraph(const onnx::NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(), [](const onnx::AttributeProto& a) {
    return a.has_g() || a.graphs_size() > 0 || a.type() == onnx::AttributeProto::GRAPH ||
           a.type() == onnx::AttributeProto::GRAPHS;
  });
}

CanonicalGroup Canonicalize(const Graph& graph, const FusionPlan& plan, const FusedGroup& group) {
  CanonicalGroup result;
  std::unordered_map<ValueId, std::string> name;
  const auto inputs = GroupInputs(graph, group);
  const auto outputs = GroupOutputs(graph, plan, group);
  for (std::size_t i = 0; i < inputs.size(); ++i) name[inputs[i]] = "x" + std::to_string(i);
  for (std::size_t i = 0; i < outputs.size(); ++i) name[outputs[i]] = "y" + std::to_string(i);
  result.num_inputs = inputs.size();
  result.num_outputs = outputs.size();
  result.key = "in" + std::to_string(inputs.size()) + ",out" + std::to_string(outputs.size()) + "|";

  std::size_t next_temp = 0;
  for (std::size_t m = 0; m < group.nodes.size(); ++m) {
    const Node& node = graph.node(group.nodes[m]);
    onnx::NodeProto body = node.proto;
    body.set_name(node.op_type + "_" + std::to_string(m));
    body.set_domain(node.domain);  // "ai.onnx" spelled "" like everywhere else
    body.clear_input();
    body.clear_output();
    std::string wiring;
    for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
      const ValueId v = node.inputs[i];
      // Members are in topological order, so an internal value is named before it is read.
      body.add_input(v == kNoValue ? "" : name.at(v));
      wiring += (i ? "," : "") + body.input(static_cast<int>(i));
    }
    wiring += ")->(";
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId v = node.outputs[i];
      if (v != kNoValue && !name.count(v)) name[v] = "t" + std::to_string(next_temp++);
      body.add_output(v == kNoValue ? "" : name.at(v));
      wiring += (i ? "," : "") + body.output(static_cast<int>(i));
    }
    // Attribute order carries no meaning; sort so equal nodes compare equal.
    std::vector<onnx::AttributeProto> attributes(body.attribute().begin(), body.attribute().end());
    std::sort(attributes.begin(), attributes.end(),
              [](const auto& a, const auto& b) { return a.name() < b.name(); });
    body.clear_attribute();
    std::string attribute_key;
    for (auto& a : attributes) {
      attribute_key += a.name() + ":" + std::to_string(static_cast<int>(a.type())) + ",";
      *body.add_attribute() = std::move(a);
    }
    result.key += node.domain + "/" + node.op_type + "(" + wiring + "){" + attribute_key + "};";
    result.body.push_back(std::move(body));
  }
  return result;
}

bool SameValue(const onnx::AttributeProto& a, const onnx::AttributeProto& b) {
  onnx::AttributeProto x = a, y = b;
  x.clear_doc_string();
  y.clear_doc_string();
  return x.SerializeAsString() == y.SerializeAsString();
}

std::string UniqueName(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int suffix = 2; taken.count(name); ++suffix) name = base + "_" + std::to_string(suffix);
  taken.insert(name);
  return name;
}

// The model's default-domain opset (exactly: the checker requires it) and the
// model's version of every other domain the body uses (1 if it imports none).
void SetOpsetImports(const Graph& graph, onnx::FunctionProto& function) {
  std::map<std::string, std::int64_t> versions{{"", graph.opset()}};
  for (const auto& node : function.node()) {
    if (versions.count(node.domain())) continue;
    std::int64_t version = 1;
    for (const auto& opset : graph.model().opset_import())
      if (opset.domain() == node.domain()) version = opset.version();
    versions[node.domain()] = version;
  }
  for (const auto& [domain, version] : versions) {
    auto* opset = function.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
}

}  // namespace

std::string FusedOpName(const Graph& graph, const FusedGroup& group) {
  constexpr std::size_t kMaxSpelledOut = 6, kAbbreviated = 3;
  const bool abbreviate = group.nodes.size() > kMaxSpelledOut;
  std::string name;
  for (std::size_t m = 0; m < group.nodes.size() && (!abbreviate || m < kAbbreviated); ++m)
    name += (m ? "_" : "") + graph.node(group.nodes[m]).op_type;
  if (abbreviate) name += "_x" + std::to_string(group.nodes.size());
  return name;
}

FunctionSet BuildFunctions(const Graph& graph, const FusionPlan& plan, std::set<std::string> taken) {
  FunctionSet result;
  result.calls.resize(plan.groups.size());

  // Families of groups with one structure key, in order of their first group.
  std::vector<CanonicalGroup> canonical(plan.groups.size());
  std::vector<std::vector<int>> families;
  std::unordered_map<std::string, std::size_t> family_of_key;
  for (const auto& group : plan.groups) {
    if (group.nodes.size() < 2 || group.call) continue;  // a pattern's own function defines called groups
    const bool opaque = std::any_of(group.nodes.begin(), group.nodes.end(),
                                    [&](NodeId id) { return HasSubgraph(graph.node(id).proto); });
    if (opaque) continue;  // written as its members, unchanged
    auto& c = canonical[static_cast<std::size_t>(group.id)] = Canonicalize(graph, plan, group);
    auto [it, inserted] = family_of_key.emplace(c.key, families.size());
    if (inserted) families.emplace_back();
    families[it->second].push_back(group.id);
  }

  for (const auto& family : families) {
    const FusedGroup& first_group = plan.groups[static_cast<std::size_t>(family.front())];
    const CanonicalGroup& first = canonical[static_cast<std::size_t>(family.front())];
    onnx::FunctionProto function;
    function.set_name(UniqueName(FusedOpName(graph, first_group), taken));
    function.set_domain(kFusedDomain);
    for (std::size_t i = 0; i < first.num_inputs; ++i) function.add_input("x" + std::to_string(i));
    for (std::size_t i = 0; i < first.num_outputs; ++i) function.add_output("y" + std::to_string(i));
    std::string members;
    for (NodeId id : first_group.nodes) members += (members.empty() ? "" : ", ") + graph.node(id).name;
    function.set_doc_string("onnx-fuse: " + std::to_string(family.size()) + " group(s) like the one of nodes " +
                            members);

    for (std::size_t m = 0; m < first.body.size(); ++m) {
      onnx::NodeProto node = first.body[m];
      for (int j = 0; j < node.attribute_size(); ++j) {
        const onnx::AttributeProto& literal = first.body[m].attribute(j);
        const bool same = std::all_of(family.begin(), family.end(), [&](int g) {
          return SameValue(canonical[static_cast<std::size_t>(g)].body[m].attribute(j), literal);
        });
        if (same) continue;
        // Varies across the family: a function attribute, set on every call.
        const std::string parameter = node.name() + "_" + literal.name();
        function.add_attribute(parameter);
        onnx::AttributeProto reference;
        reference.set_name(literal.name());
        reference.set_type(literal.type());
        reference.set_ref_attr_name(parameter);
        *node.mutable_attribute(j) = reference;
        for (int g : family) {
          onnx::AttributeProto value = canonical[static_cast<std::size_t>(g)].body[m].attribute(j);
          value.set_name(parameter);
          result.calls[static_cast<std::size_t>(g)].attributes.push_back(std::move(value));
        }
      }
      *function.add_node() = std::move(node);
    }
    SetOpsetImports(graph, function);
    for (int g : family) result.calls[static_cast<std::size_t>(g)].function = function.name();
    result.functions.push_back(std::move(function));
  }
  return result;
}

}  // namespace onnxfuse::detail
