// MatchPattern: finds a pattern's body in the graph, anchored at its last node.
//
// Unification by a depth-first work list of (body value, graph value) goals:
// binding a value produced by a body node binds that node to the value's graph
// producer (op type, inputs, outputs and attributes checked locally) and pushes
// goals for its inputs. Function inputs are wildcards: each binds one graph
// value (kNoValue for an omitted optional input), the same wherever it is used.
// The only choice point is a commutative node's input order; the state is
// copied there (patterns are small), so the cost per anchor is O(pattern size)
// times 2^(commutative nodes reached with distinct inputs). Once the body is
// bound: intermediates must not escape the match, then the requirements run.
// Every failure is recorded with its depth (body nodes bound; the final checks
// rank above all structural failures); the deepest one is the near-miss.
#include <algorithm>
#include <sstream>
#include <unordered_map>

#include <onnx/defs/schema.h>

#include "onnxfuse/error.h"
#include "patterns/pattern.h"
#include "patterns/body_index.h"
#include "patterns/pattern_predicates.h"

namespace onnxfuse {

namespace {

using onnx::AttributeProto;
using detail::AttrEqual;
using detail::AttrText;
using detail::TypeOf;

bool Commutative(const std::string& op) {
  return op == "Add" || op == "Mul" || op == "Sum" || op == "Max" || op == "Min";
}

struct Captured {
  std::optional<AttributeProto> present;    // as written on the graph node
  std::optional<AttributeProto> effective;  // present, else the schema default
  NodeId node = kNoNode;
};

struct State {
  std::vector<std::optional<ValueId>> value;  // per body value
  std::vector<std::optional<NodeId>> node;    // per body node; kNoNode: a Constant matched by value
  std::vector<std::optional<Captured>> attr;  // per function attribute
  int depth = 0;                              // body nodes bound
};

struct Goal {
  int value;
  ValueId graph;
  NodeId consumer;  // graph node reading it (for messages)
};

class Matcher {
 public:
  Matcher(const Graph& graph, const Pattern& pattern, const std::vector<bool>& claimed)
      : graph_(graph), pattern_(pattern), fn_(pattern.function), claimed_(claimed), index_(fn_) {}

  MatchOutcome Run(NodeId anchor) {
    State s;
    s.value.resize(index_.values.size());
    s.node.resize(static_cast<std::size_t>(fn_.node_size()));
    s.attr.resize(static_cast<std::size_t>(fn_.attribute_size()));
    if (Expand(std::move(s), {}, fn_.node_size() - 1, anchor)) return {std::move(match_), std::nullopt};
    Check(best_.has_value(), "a failed match of " + fn_.name() + " records why");
    return {std::nullopt, std::move(best_->second)};
  }

 private:
  std::string Name(NodeId g) const { return "'" + graph_.node(g).name + "'"; }
  std::string ValueName(ValueId v) const { return v == kNoValue ? "(omitted)" : "'" + graph_.value(v).name + "'"; }
  const onnx::NodeProto& Body(int k) const { return fn_.node(k); }

  bool Fail(int depth, NodeId node, std::string reason, std::string detail) {
    if (!best_ || depth > best_->first)
      best_ = std::make_pair(depth, PatternNearMiss{node, std::move(reason), std::move(detail)});
    return false;
  }

  bool Solve(State s, std::vector<Goal> goals) {
    while (!goals.empty()) {
      Goal goal = goals.back();
      goals.pop_back();
      const auto& bv = index_.values[static_cast<std::size_t>(goal.value)];
      auto& bound = s.value[static_cast<std::size_t>(goal.value)];
      if (bound) {
        if (*bound == goal.graph) continue;
        return Fail(s.depth, goal.consumer, "binding_conflict",
                    Name(goal.consumer) + " reads " + ValueName(goal.graph) + " where the pattern's '" + bv.name +
                        "' is already " + ValueName(*bound));
      }
      bound = goal.graph;
      if (bv.input >= 0) continue;  // a wildcard
      const onnx::NodeProto& body = Body(bv.producer);
      auto expect = [&] { return "the pattern expects " + body.op_type() + " ('" + bv.name + "')"; };
      if (body.op_type() == "Constant") {
        if (!MatchConstant(s, goal, body)) return false;
        s.node[static_cast<std::size_t>(bv.producer)] = kNoNode;
        ++s.depth;
        continue;
      }
      NodeId producer = graph_.value(goal.graph).producer;
      if (producer == kNoNode)
        return Fail(s.depth, goal.consumer, "op_mismatch",
                    Name(goal.consumer) + " reads " + ValueName(goal.graph) + ", a graph input; " + expect());
      const Node& node = graph_.node(producer);
      if (node.op_type != body.op_type() || !node.domain.empty())
        return Fail(s.depth, producer, "op_mismatch",
                    Name(goal.consumer) + " reads " + ValueName(goal.graph) + " from " + Name(producer) + " (" +
                        node.op_type + "); " + expect());
      auto slot = std::find(node.outputs.begin(), node.outputs.end(), goal.graph) - node.outputs.begin();
      if (slot != bv.output)
        return Fail(s.depth, producer, "op_mismatch",
                    Name(goal.consumer) + " reads output " + std::to_string(slot) + " of " + Name(producer) +
                        "; the pattern reads output " + std::to_string(bv.output));
      // Its outputs are bound with the node, so a second reader lands in the check above.
      return Expand(std::move(s), std::move(goals), bv.producer, producer);
    }
    return Finish(s);
  }

  // Binds body node k to graph node g, then solves on with its inputs (both orders when commutative).
  bool Expand(State s, std::vector<Goal> goals, int k, NodeId g) {
    const onnx::NodeProto& body = Body(k);
    const Node& node = graph_.node(g);
    for (std::size_t j = 0; j < s.node.size(); ++j)
      if (s.node[j] == g)
        return Fail(s.depth, g, "binding_conflict", Name(g) + " would stand for two nodes of the pattern");
    if (g < claimed_.size() && claimed_[g])
      return Fail(s.depth, g, "already_fused", Name(g) + " is already part of another fused group");
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(graph_.opset()), "");

    // Outputs: the graph node may not write more than the body node names.
    const auto& outs = index_.node_outputs[static_cast<std::size_t>(k)];
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      ValueId gv = node.outputs[o];
      if (gv != kNoValue && (o >= outs.size() || outs[o] < 0))
        return Fail(s.depth, g, "output_mismatch",
                    Name(g) + " also writes " + ValueName(gv) + " (output " + std::to_string(o) +
                        "), which the pattern does not cover");
    }
    for (std::size_t o = 0; o < outs.size(); ++o)
      if (outs[o] >= 0) s.value[static_cast<std::size_t>(outs[o])] = o < node.outputs.size() ? node.outputs[o] : kNoValue;

    if (!MatchAttributes(s, k, g, schema)) return false;

    // Inputs: trailing omitted ones do not count; missing optional ones bind their wildcard to kNoValue.
    std::size_t given = node.num_explicit_inputs;
    while (given > 0 && node.inputs[given - 1] == kNoValue) --given;
    const auto& ins = index_.node_inputs[static_cast<std::size_t>(k)];
    if (given > ins.size())
      return Fail(s.depth, g, "input_mismatch",
                  Name(g) + " has " + std::to_string(given) + " inputs; the pattern's " + body.op_type() + " has " +
                      std::to_string(ins.size()));
    std::vector<Goal> mine;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      ValueId gv = i < given ? node.inputs[i] : kNoValue;
      if (ins[i] < 0) {
        if (gv != kNoValue)
          return Fail(s.depth, g, "input_mismatch",
                      Name(g) + " reads " + ValueName(gv) + " as input " + std::to_string(i) + ", which the pattern omits");
        continue;
      }
      if (gv == kNoValue) {
        bool optional = false;
        if (schema && !schema->inputs().empty()) {
          const auto& formal = schema->inputs()[std::min(i, schema->inputs().size() - 1)];
          optional = formal.GetOption() == onnx::OpSchema::FormalParameterOption::Optional;
        }
        if (!optional || index_.values[static_cast<std::size_t>(ins[i])].input < 0)
          return Fail(s.depth, g, "input_mismatch",
                      Name(g) + " has no input " + std::to_string(i) + "; the pattern's " + body.op_type() +
                          " needs '" + body.input(static_cast<int>(i)) + "' there");
      }
      mine.push_back({ins[i], gv, g});
    }
    s.node[static_cast<std::size_t>(k)] = g;
    ++s.depth;

    bool swap = Commutative(body.op_type()) && mine.size() == 2 && mine[0].graph != mine[1].graph;
    std::vector<Goal> other = swap ? goals : std::vector<Goal>{};
    goals.insert(goals.end(), mine.rbegin(), mine.rend());  // input 0 is solved first
    if (!swap) return Solve(std::move(s), std::move(goals));
    std::swap(mine[0].graph, mine[1].graph);
    other.insert(other.end(), mine.rbegin(), mine.rend());
    if (Solve(s, std::move(goals))) return true;
    return Solve(std::move(s), std::move(other));
  }

  bool MatchAttributes(State& s, int k, NodeId g, const onnx::OpSchema* schema) {
    const onnx::NodeProto& body = Body(k);
    const Node& node = graph_.node(g);
    auto find_body = [&](const std::string& name) -> const AttributeProto* {
      for (const auto& a : body.attribute())
        if (a.name() == name) return &a;
      return nullptr;
    };
    auto default_of = [&](const std::string& name) -> const AttributeProto* {
      if (!schema) return nullptr;
      auto it = schema->attributes().find(name);
      if (it == schema->attributes().end() || it->second.default_value.type() == AttributeProto::UNDEFINED)
        return nullptr;
      return &it->second.default_value;
    };
    for (const auto& a : node.proto.attribute()) {
      const AttributeProto* b = find_body(a.name());
      if (b && !b->ref_attr_name().empty()) {
        if (!Capture(s, *b, &a, default_of(a.name()), g)) return false;
      } else if (b) {
        if (!AttrEqual(a, *b))
          return Fail(s.depth, g, "attribute_mismatch",
                      Name(g) + " has " + a.name() + "=" + AttrText(a) + "; the pattern requires " + AttrText(*b));
      } else if (const AttributeProto* d = default_of(a.name()); !d || !AttrEqual(a, *d)) {
        return Fail(s.depth, g, "attribute_mismatch",
                    Name(g) + " has " + a.name() + "=" + AttrText(a) + ", which the pattern does not cover");
      }
    }
    for (const auto& b : body.attribute()) {
      bool on_node = std::any_of(node.proto.attribute().begin(), node.proto.attribute().end(),
                                 [&](const AttributeProto& a) { return a.name() == b.name(); });
      if (on_node) continue;
      if (!b.ref_attr_name().empty()) {
        if (!Capture(s, b, nullptr, default_of(b.name()), g)) return false;
        continue;
      }
      const AttributeProto* d = default_of(b.name());
      if (!d || !AttrEqual(b, *d))
        return Fail(s.depth, g, "attribute_mismatch",
                    Name(g) + " has no " + b.name() + (d ? " (default " + AttrText(*d) + ")" : "") +
                        "; the pattern requires " + AttrText(b));
    }
    return true;
  }

  // Binds function attribute @ref to a graph node's attribute; `present` is nullptr when the
  // node does not have it (then it is compared as its schema default, `fallback`, if any).
  bool Capture(State& s, const AttributeProto& body, const AttributeProto* present, const AttributeProto* fallback,
               NodeId g) {
    const auto& names = fn_.attribute();
    auto index = static_cast<std::size_t>(std::find(names.begin(), names.end(), body.ref_attr_name()) - names.begin());
    Captured c;
    c.node = g;
    if (present) {
      c.present = *present;
      c.present->set_name(body.ref_attr_name());
      c.present->set_type(static_cast<AttributeProto::AttributeType>(TypeOf(*present)));
      c.effective = *present;
    } else if (fallback) {
      c.effective = *fallback;
    }
    auto& slot = s.attr[index];
    if (!slot) {
      slot = std::move(c);
      return true;
    }
    bool same = slot->effective && c.effective ? AttrEqual(*slot->effective, *c.effective)
                                               : !slot->effective && !c.effective;
    if (!same) {
      auto text = [&](const Captured& x) { return x.effective ? AttrText(*x.effective) : std::string("absent"); };
      return Fail(s.depth, g, "attribute_mismatch",
                  "@" + body.ref_attr_name() + " would be " + text(*slot) + " at " + Name(slot->node) + " but " +
                      text(c) + " at " + Name(g));
    }
    if (!slot->present && c.present) slot->present = std::move(c.present);
    return true;
  }

  bool MatchConstant(const State& s, const Goal& goal, const onnx::NodeProto& body) {
    const onnx::TensorProto& literal = body.attribute(0).t();
    double expected = *detail::SingleNumber(literal);
    std::ostringstream want;
    want << "the pattern expects the constant " << expected;
    auto found = detail::ConstantScalar(graph_, goal.graph);
    if (!found)
      return Fail(s.depth, goal.consumer, "constant_mismatch",
                  Name(goal.consumer) + " reads " + ValueName(goal.graph) + ", not a one-number constant; " + want.str());
    auto max_rank = std::max<std::size_t>(1, static_cast<std::size_t>(literal.dims_size()));
    if (found->elem_type != literal.data_type() || found->rank > max_rank ||
        !detail::Near(found->value, expected, detail::kConstantTolerance)) {
      std::ostringstream got;
      got << found->value;
      return Fail(s.depth, goal.consumer, "constant_mismatch",
                  Name(goal.consumer) + " reads " + ValueName(goal.graph) + " = " + got.str() + " (" +
                      onnx::TensorProto::DataType_Name(found->elem_type) + ", rank " + std::to_string(found->rank) +
                      "); " + want.str() + " (" + onnx::TensorProto::DataType_Name(literal.data_type()) + ")");
    }
    return true;
  }

  bool Finish(const State& s) {
    const int depth = fn_.node_size() + 1;  // final checks outrank every structural failure
    std::vector<NodeId> members;
    for (const auto& n : s.node)
      if (n && *n != kNoNode) members.push_back(*n);
    std::vector<ValueId> exposed;
    for (int v : index_.outputs) {
      ValueId gv = *s.value[static_cast<std::size_t>(v)];
      if (gv == kNoValue)
        return Fail(depth, members.back(), "output_mismatch",
                    "the pattern returns '" + index_.values[static_cast<std::size_t>(v)].name +
                        "', which the graph node does not write");
      exposed.push_back(gv);
    }
    for (NodeId g : members)
      for (ValueId out : graph_.node(g).outputs) {
        if (out == kNoValue || std::find(exposed.begin(), exposed.end(), out) != exposed.end()) continue;
        if (graph_.value(out).is_graph_output)
          return Fail(depth, g, "intermediate_used_outside",
                      "intermediate " + ValueName(out) + " of " + Name(g) + " is a graph output");
        for (NodeId user : graph_.value(out).consumers)
          if (std::find(members.begin(), members.end(), user) == members.end())
            return Fail(depth, g, "intermediate_used_outside",
                        "intermediate " + ValueName(out) + " is used by node " + Name(user) + " outside the match");
      }

    // Convexity: a wildcard may not read a value the match computes, directly
    // (Add(n, n) matched as Add(n, shortcut)) or through nodes outside it: the
    // fused call would read its own result.
    for (int i = 0; i < fn_.input_size(); ++i)
      if (auto v = s.value[static_cast<std::size_t>(i)]; v && *v != kNoValue && DependsOn(*v, members))
        return Fail(depth, members.back(), "binding_conflict",
                    "the pattern input '" + fn_.input(i) + "' would read " + ValueName(*v) +
                        ", which depends on the match itself");

    auto input_value = [&](const std::string& name) {
      int i = static_cast<int>(std::find(fn_.input().begin(), fn_.input().end(), name) - fn_.input().begin());
      return s.value[static_cast<std::size_t>(i)].value_or(kNoValue);
    };
    auto attribute = [&](const std::string& name) -> const AttributeProto* {
      auto i = static_cast<std::size_t>(std::find(fn_.attribute().begin(), fn_.attribute().end(), name) -
                                        fn_.attribute().begin());
      return s.attr[i] && s.attr[i]->present ? &*s.attr[i]->present : nullptr;
    };
    detail::PredicateBindings bindings{input_value, attribute};
    for (const auto& req : pattern_.requirements)
      if (auto failure = detail::CheckRequirement(graph_, req, bindings))
        return Fail(depth + 1, ReaderOf(s, req.args[failure->arg]), failure->reason, failure->detail);

    PatternMatch match;
    match.nodes = members;
    for (int i = 0; i < fn_.input_size(); ++i) match.inputs.push_back(s.value[static_cast<std::size_t>(i)].value_or(kNoValue));
    match.outputs = exposed;
    for (const auto& slot : s.attr)
      if (slot && slot->present) match.attributes.push_back(*slot->present);
    match_ = std::move(match);
    return true;
  }

  // Whether value v is computed from an output of `members`. Nodes are in
  // topological order, so only producers after the first member can.
  bool DependsOn(ValueId v, const std::vector<NodeId>& members) const {
    if (members.empty()) return false;
    const NodeId first = *std::min_element(members.begin(), members.end());
    std::vector<NodeId> stack;
    std::vector<bool> seen(graph_.num_nodes(), false);
    if (graph_.value(v).producer != kNoNode) stack.push_back(graph_.value(v).producer);
    while (!stack.empty()) {
      const NodeId n = stack.back();
      stack.pop_back();
      if (n < first || seen[n]) continue;
      seen[n] = true;
      if (std::find(members.begin(), members.end(), n) != members.end()) return true;
      for (ValueId in : graph_.node(n).inputs)
        if (in != kNoValue && graph_.value(in).producer != kNoNode) stack.push_back(graph_.value(in).producer);
    }
    return false;
  }

  // The graph node bound to the first body node reading input `name` or capturing attribute
  // `name` (the anchor when none does).
  NodeId ReaderOf(const State& s, const std::string& name) const {
    for (int k = 0; k < fn_.node_size(); ++k) {
      const auto& body = Body(k);
      bool reads = std::find(body.input().begin(), body.input().end(), name) != body.input().end() ||
                   std::any_of(body.attribute().begin(), body.attribute().end(),
                               [&](const AttributeProto& a) { return a.ref_attr_name() == name; });
      const auto& bound = s.node[static_cast<std::size_t>(k)];
      if (reads && bound && *bound != kNoNode) return *bound;
    }
    return *s.node.back();
  }

  const Graph& graph_;
  const Pattern& pattern_;
  const onnx::FunctionProto& fn_;
  const std::vector<bool>& claimed_;
  detail::BodyIndex index_;
  std::optional<PatternMatch> match_;
  std::optional<std::pair<int, PatternNearMiss>> best_;
};

}  // namespace

MatchOutcome MatchPattern(const Graph& graph, const Pattern& pattern, NodeId anchor,
                          const std::vector<bool>& claimed) {
  const auto& fn = pattern.function;
  Check(fn.node_size() > 0, "pattern " + fn.name() + " has a body");
  Check(anchor < graph.num_nodes(), "anchor node id is in range");
  const onnx::NodeProto& last = fn.node(fn.node_size() - 1);
  const Node& node = graph.node(anchor);
  std::string domain = last.domain() == "ai.onnx" ? "" : last.domain();
  if (node.op_type != last.op_type() || node.domain != domain) return {};
  return Matcher(graph, pattern, claimed).Run(anchor);
}

}  // namespace onnxfuse
