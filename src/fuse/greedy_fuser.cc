#include "fuse/greedy_fuser.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

// Rejection details name at most this many nodes or values, then "and N more".
constexpr std::size_t kNamesInDetail = 4;

std::string Describe(const Graph& graph, NodeId id) { return QuotedNode(graph.node(id)); }

template <typename T, typename NameOf>
std::string NameList(const std::vector<T>& items, NameOf name_of) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kNamesInDetail; ++i) out += (i ? ", " : "") + name_of(items[i]);
  if (items.size() > kNamesInDetail) out += " and " + std::to_string(items.size() - kNamesInDetail) + " more";
  return out;
}

bool IsConstantNode(const Node& node) { return node.op_type == "Constant" && node.domain.empty(); }

// The one node reading `id`'s outputs; kNoNode with `many` set when several
// nodes read them, kNoNode alone when none does. O(uses), no allocation.
NodeId SoleConsumer(const Graph& graph, NodeId id, bool& many) {
  NodeId sole = kNoNode;
  many = false;
  for (ValueId out : graph.node(id).outputs) {
    if (out == kNoValue) continue;
    for (NodeId c : graph.value(out).consumers) {
      if (sole == kNoNode) sole = c;
      else if (c != sole) { many = true; return kNoNode; }
    }
  }
  return sole;
}

// Distinct consumers of `id`, sorted; O(k log k) (only built for a fork's detail).
std::vector<NodeId> DistinctConsumers(const Graph& graph, NodeId id) {
  std::vector<NodeId> result;
  for (ValueId out : graph.node(id).outputs)
    if (out != kNoValue) result.insert(result.end(), graph.value(out).consumers.begin(), graph.value(out).consumers.end());
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

// Distinct non-constant input values of `id`, in input order.
std::vector<ValueId> ActivationInputs(const Graph& graph, NodeId id) {
  std::vector<ValueId> result;
  for (ValueId v : graph.node(id).inputs)
    if (v != kNoValue && !graph.IsConstant(v) && std::find(result.begin(), result.end(), v) == result.end())
      result.push_back(v);
  return result;
}

// True when `id` reads more than one distinct non-constant value. O(inputs).
bool IsJoin(const Graph& graph, NodeId id) {
  ValueId first = kNoValue;
  for (ValueId v : graph.node(id).inputs) {
    if (v == kNoValue || graph.IsConstant(v)) continue;
    if (first == kNoValue) first = v;
    else if (v != first) return true;
  }
  return false;
}

std::string FormatRatio(double ratio) {
  std::ostringstream out;
  out << std::setprecision(3) << ratio;
  return out.str();
}

// Grows chains and records why each one ended.
class ChainBuilder {
 public:
  ChainBuilder(const Graph& graph, const FuserOptions& options)
      : graph_(graph), options_(options), kinds_(ClassifyAll(graph)), label_(graph.num_nodes(), -1),
        opaque_named_(graph.num_nodes(), false) {}

  FusionPlan Run() {
    const NodeId n = static_cast<NodeId>(graph_.num_nodes());
    for (NodeId head = 0; head < n; ++head) {
      if (label_[head] >= 0) continue;
      const int chain = static_cast<int>(heads_.size());
      heads_.push_back(head);
      label_[head] = chain;
      if (kinds_[head] == OpPatternKind::kOpaque) {
        // A group of its own; named once unless the previous chain already did.
        if (!opaque_named_[head] && !IsConstantNode(graph_.node(head)))
          Reject(head, kNoNode, "opaque", Describe(graph_, head) + " is opaque: it is never fused");
        continue;
      }
      NodeId tail = head;
      int size = 1;
      for (NodeId next = Successor(head, tail, size); next != kNoNode; next = Successor(head, tail, size)) {
        label_[next] = chain;
        tail = next;
        ++size;
      }
    }
    FusionPlan plan = MakeFusionPlan(graph_, kinds_, label_,
                                     std::vector<std::string>(heads_.size(), "greedy.chain"),
                                     "greedy");
    plan.rejections = std::move(rejections_);
    ValidateFusionPlan(graph_, plan);
    return plan;
  }

 private:
  // The node the chain from `head` (ending at `tail`, `size` nodes) grows into,
  // or kNoNode after recording why it stops (tests in the header's order).
  NodeId Successor(NodeId head, NodeId tail, int size) {
    bool many = false;
    const NodeId next = SoleConsumer(graph_, tail, many);
    const bool has_consumers = many || next != kNoNode;

    for (ValueId out : graph_.node(tail).outputs) {
      if (out == kNoValue || !graph_.value(out).is_graph_output || !has_consumers) continue;
      return Reject(tail, next, "graph_output",
                    Describe(graph_, tail) + " writes graph output '" + graph_.value(out).name +
                        "', which must stay visible, so the chain ends there");
    }
    if (many) {
      auto consumers = DistinctConsumers(graph_, tail);
      return Reject(tail, kNoNode, "fork",
                    "the outputs of " + Describe(graph_, tail) + " are read by " + std::to_string(consumers.size()) +
                        " nodes: " + NameList(consumers, [&](NodeId c) { return Describe(graph_, c); }));
    }
    if (next == kNoNode) return kNoNode;  // nothing reads the tail: the chain just ends

    if (label_[next] >= 0)
      return Reject(tail, next, "join",
                    Describe(graph_, next) + " is already in the chain from " +
                        Describe(graph_, heads_[static_cast<std::size_t>(label_[next])]));
    if (IsJoin(graph_, next)) {
      auto inputs = ActivationInputs(graph_, next);
      return Reject(tail, next, "join",
                    Describe(graph_, next) + " reads " + std::to_string(inputs.size()) + " non-constant values: " +
                        NameList(inputs, [&](ValueId v) { return "'" + graph_.value(v).name + "'"; }));
    }
    if (kinds_[next] == OpPatternKind::kOpaque) {
      opaque_named_[next] = true;
      return Reject(tail, next, "opaque", Describe(graph_, next) + " is opaque: it is never fused");
    }
    if (std::string why = ShapeChange(next); !why.empty()) return Reject(tail, next, "shape_change", why);
    if (size >= options_.max_group_size)
      return Reject(tail, next, "group_size_limit",
                    "the chain from " + Describe(graph_, head) + " already has " + std::to_string(size) +
                        " nodes (max_group_size " + std::to_string(options_.max_group_size) + ")");
    return next;
  }

  // Why `node`'s first output is a significant resize of its non-constant
  // input, or "" when it is not (or a size is unknown).
  std::string ShapeChange(NodeId node) const {
    const Node& s = graph_.node(node);
    ValueId in = kNoValue;
    for (ValueId v : s.inputs)
      if (v != kNoValue && !graph_.IsConstant(v)) { in = v; break; }
    if (in == kNoValue || s.outputs.empty() || s.outputs[0] == kNoValue) return "";
    const TensorType& in_type = graph_.value(in).type;
    const TensorType& out_type = graph_.value(s.outputs[0]).type;
    auto in_count = in_type.NumElements(), out_count = out_type.NumElements();
    if (!in_count || !out_count || *in_count <= 0 || *out_count <= 0) return "";
    const double ratio = static_cast<double>(std::max(*in_count, *out_count)) /
                         static_cast<double>(std::min(*in_count, *out_count));
    if (ratio < options_.greedy_shape_ratio) return "";
    return Describe(graph_, node) + " turns " + in_type.ShapeString() + " (" + std::to_string(*in_count) +
           " elements) into " + out_type.ShapeString() + " (" + std::to_string(*out_count) + " elements), a " +
           FormatRatio(ratio) + "x change (limit " + FormatRatio(options_.greedy_shape_ratio) + "x)";
  }

  NodeId Reject(NodeId node, NodeId target, const char* reason, std::string detail) {
    rejections_.push_back(Rejection{node, target, reason, std::move(detail)});
    return kNoNode;
  }

  const Graph& graph_;
  const FuserOptions& options_;
  std::vector<OpPatternKind> kinds_;
  std::vector<int> label_;           // node -> chain, -1 while unvisited
  std::vector<bool> opaque_named_;   // an "opaque" rejection already targets this node
  std::vector<NodeId> heads_;        // chain -> its first node
  std::vector<Rejection> rejections_;
};

}  // namespace

FusionPlan FuseGreedy(const Graph& graph, const FuserOptions& options) {
  if (options.max_group_size < 1)
    throw Error(ErrorKind::kUsage,
                "the maximum group size must be at least 1 (got " + std::to_string(options.max_group_size) + ")");
  return ChainBuilder(graph, options).Run();
}

}  // namespace onnxfuse
