#include "rewrite/inline_control_flow.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "ir/node_label.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "rewrite/control_flow_decisions.h"
#include "rewrite/subgraph_check.h"

namespace onnxfuse {

namespace {


// The node's outputs take their names from the expansion: a value one of its
// nodes writes is renamed to the output's name, anything else (an outer value,
// a constant, a value given twice) goes through an Identity.
void ConnectOutputs(Expansion& e, const onnx::NodeProto& node, NameSource& names, const std::string& prefix) {
  std::set<std::string> written;
  for (const auto& n : e.nodes) written.insert(n.output().begin(), n.output().end());
  std::map<std::string, std::string> rename;
  std::vector<std::pair<std::string, std::string>> copies;  // (from, to)
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& out = node.output(k);
    const std::string& value = e.outputs.at(static_cast<std::size_t>(k));
    if (out.empty()) continue;
    if (written.count(value) && !rename.count(value)) rename[value] = out;
    else copies.emplace_back(value, out);
  }
  RenameValues(e.nodes, rename);
  for (const auto& [from, to] : copies) {
    onnx::NodeProto identity;
    identity.set_op_type("Identity");
    identity.set_name(names.Fresh(prefix + "Identity"));
    auto it = rename.find(from);
    identity.add_input(it == rename.end() ? from : it->second);
    identity.add_output(to);
    e.nodes.push_back(identity);
  }
}

// Every name the graph's nodes (their subgraphs included) and outputs read.
std::unordered_set<std::string> ReadNames(const onnx::GraphProto& g, const std::vector<bool>* keep = nullptr) {
  std::unordered_set<std::string> read;
  for (const auto& out : g.output()) read.insert(out.name());
  for (int i = 0; i < g.node_size(); ++i) {
    if (keep && !(*keep)[static_cast<std::size_t>(i)]) continue;
    read.insert(g.node(i).input().begin(), g.node(i).input().end());
    for (auto& name : CapturedNames(g.node(i))) read.insert(name);
  }
  return read;
}

// Drops what nothing reads after the expansion, until nothing more goes: nodes
// and initializers of the expansions (`added_nodes`, `added_initializers`:
// the copies' cond outputs of an unrolled Loop, for one) and of the graph when
// they were read before (`read_before`: the Constant or Shape -> Gather that
// fed a Loop's trip count). What nothing read before stays as it was.
void DropUnread(onnx::GraphProto& g, const std::vector<bool>& added_nodes, const std::set<std::string>& added_initializers,
                const std::unordered_set<std::string>& read_before) {
  std::vector<bool> keep(added_nodes.size(), true);
  std::unordered_set<std::string> read;
  for (bool again = true; again;) {
    again = false;
    read = ReadNames(g, &keep);
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& outs = g.node(i).output();
      auto in = [&](const std::unordered_set<std::string>& names) {
        return std::any_of(outs.begin(), outs.end(), [&](const std::string& o) { return !o.empty() && names.count(o); });
      };
      const auto at = static_cast<std::size_t>(i);
      if (keep[at] && (added_nodes[at] || in(read_before)) && !in(read)) {
        keep[at] = false;
        again = true;
      }
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g.node_size(); ++i)
    if (keep[static_cast<std::size_t>(i)]) nodes.Add()->Swap(g.mutable_node(i));
  g.mutable_node()->Swap(&nodes);
  auto dead = [&](const std::string& name) {
    return (added_initializers.count(name) || read_before.count(name)) && !read.count(name);
  };
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  std::set<std::string> dropped;
  for (auto& t : *g.mutable_initializer()) {
    if (dead(t.name())) dropped.insert(t.name());
    else initializers.Add()->Swap(&t);
  }
  g.mutable_initializer()->Swap(&initializers);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;  // IR 3 lists initializers as inputs too
  for (auto& v : *g.mutable_input())
    if (!dropped.count(v.name())) inputs.Add()->Swap(&v);
  g.mutable_input()->Swap(&inputs);
}

// IR 3 lists every initializer among the graph inputs.
void AddInitializer(onnx::ModelProto& model, onnx::TensorProto tensor) {
  if (model.ir_version() < 4) {
    auto* input = model.mutable_graph()->add_input();
    input->set_name(tensor.name());
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    auto* shape = type->mutable_shape();
    for (auto d : tensor.dims()) shape->add_dim()->set_dim_value(d);
  }
  *model.mutable_graph()->add_initializer() = std::move(tensor);
}

// The Ifs of `candidates` whose expansion (nodes named "<If>/...") a load
// error names; all of them when it names none (the failing node unnamed).
std::vector<std::string> IfsNamedIn(const std::string& error, const std::vector<std::string>& candidates) {
  std::vector<std::string> named;
  for (const std::string& name : candidates) {
    const std::string prefix = name + "/";
    for (auto at = error.find(prefix); at != std::string::npos; at = error.find(prefix, at + 1)) {
      const char before = at == 0 ? ' ' : error[at - 1];
      if (!std::isalnum(static_cast<unsigned char>(before)) && before != '_' && before != '/') {
        named.push_back(name);
        break;
      }
    }
  }
  return named.empty() ? candidates : named;
}

}  // namespace

ControlFlowResult InlineControlFlow(Graph& graph, const ControlFlowOptions& options) {
  ControlFlowResult result;
  // Ifs (by node name) whose branch never taken does not hold at the graph's
  // shapes: they stay Ifs even with select_run_time_if.
  std::set<std::string> keep_if;
  for (int round = 0; round < kMaxRounds; ++round) {
    result.refused.clear();
    const std::size_t expanded_before = result.expanded.size();
    const auto& all = graph.nodes();
    if (std::none_of(all.begin(), all.end(), IsControlFlow)) break;
    // Every node decided first: the model (its weights too) is copied only
    // when a node expands. A detector whose If is decided at run time keeps
    // its graph as it is: copying its weights for nothing (78 MB for
    // torchvision's Faster R-CNN) would be a third of its session's creation.
    NameSource names(graph.model());
    std::map<NodeId, Expansion> expansions;
    std::vector<std::string> both_branches;  // Ifs of this round computed as both branches
    for (NodeId id = 0; id < graph.num_nodes(); ++id) {
      const Node& node = graph.node(id);
      if (!IsControlFlow(node)) continue;
      ControlFlowOptions decide = options;
      if (keep_if.count(node.name)) decide.select_run_time_if = false;
      ControlFlowDecision d = DecideControlFlow(graph, node, names, decide);
      if (d.expansion && round + 1 == kMaxRounds)
        d = {std::nullopt, NodeLabel(node) + ": its control flow is nested deeper than " + std::to_string(kMaxRounds) + " levels",
             "nested_too_deep"};
      if (!d.expansion) {
        result.refused.push_back({node.name, node.op_type, d.reason, d.detail});
        continue;
      }
      if (d.both_branches) both_branches.push_back(node.name);
      ConnectOutputs(*d.expansion, node.proto, names, node.name + "/");
      result.expanded.push_back({node.name, node.op_type, d.detail});
      expansions.emplace(id, std::move(*d.expansion));
    }
    if (expansions.empty()) break;
    onnx::ModelProto model = graph.model();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    std::vector<bool> added;  // per entry of `nodes`: from an expansion
    std::set<std::string> added_initializers;
    const auto read_before = ReadNames(model.graph());
    std::set<std::string> replaced_outputs;
    for (NodeId id = 0; id < graph.num_nodes(); ++id) {
      const onnx::NodeProto& proto = model.graph().node(static_cast<int>(id));
      auto expansion = expansions.find(id);
      if (expansion == expansions.end()) {
        *nodes.Add() = proto;
        added.push_back(false);
        continue;
      }
      for (auto& n : expansion->second.nodes) {
        *nodes.Add() = std::move(n);
        added.push_back(true);
      }
      for (auto& t : expansion->second.initializers) {
        added_initializers.insert(t.name());
        AddInitializer(model, std::move(t));
      }
      replaced_outputs.insert(proto.output().begin(), proto.output().end());
    }
    model.mutable_graph()->mutable_node()->Swap(&nodes);
    DropUnread(*model.mutable_graph(), added, added_initializers, read_before);
    // The replaced nodes' outputs are typed again by shape inference, from what now computes them.
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    for (const auto& vi : model.graph().value_info())
      if (!replaced_outputs.count(vi.name())) *kept.Add() = vi;
    model.mutable_graph()->mutable_value_info()->Swap(&kept);
    OpsetConversion conversion = graph.conversion();
    try {
      graph = LoadModelProto(std::move(model), graph.source_path());
    } catch (const Error& e) {
      // A body that was invalid in the user's model (onnx's inference of the
      // whole model let it through) is the user's to fix, not a bug here.
      for (const Node& node : graph.nodes()) {
        if (!IsControlFlow(node)) continue;
        const std::string reason = InvalidBodyReason(graph.model(), node.proto);
        if (!reason.empty())
          throw Error(ErrorKind::kInvalidModel, NodeInFile(graph, node) + ": " + reason);
      }
      // Both branches of an If selected at run time are computed whichever
      // is taken, and at these shapes one of them may not hold (an Expand
      // to a fixed shape, in the branch the condition never picks): the
      // round is decided again with that If left to run as the branch its
      // condition picks, as ONNX Runtime runs it.
      const std::vector<std::string> failing = IfsNamedIn(e.what(), both_branches);
      if (!failing.empty()) {
        spdlog::debug("{}: the model with both branches of {} does not load ({}); it stays an If",
                      graph.source_path(), failing.front(), e.what());
        keep_if.insert(failing.begin(), failing.end());
        result.expanded.resize(expanded_before);
        --round;
        continue;
      }
      throw Error(ErrorKind::kInternal, std::string("the model with its control flow expanded does not load: ") + e.what());
    }
    graph.set_conversion(std::move(conversion));
  }
  return result;
}

void RequireNoControlFlow(const Graph& graph, const ControlFlowResult& result) {
  if (!result.refused.empty())
    throw Error(ErrorKind::kUnsupported, graph.source_path() + ": " + result.refused.front().detail);
}

bool IsControlFlow(const Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan");
}

}  // namespace onnxfuse
