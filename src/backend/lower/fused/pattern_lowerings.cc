// Lowering a fusion group by its library pattern's name (pattern_lowerings.h).
#include "backend/lower/fused/pattern_lowerings.h"

#include <map>

#include "backend/lower/core/chain.h"
#include "backend/lower/fused/gelu.h"
#include "backend/lower/fused/inverted_residual.h"
#include "backend/lower/fused/layer_norm.h"
#include "backend/lower/ops/softmax.h"
#include "backend/lower/fused/squeeze_excite.h"

namespace onnxfuse::backend {

namespace {

// The group's members that compute (Constant nodes are data, folded before
// any group is lowered), in topological order. Each pattern below is a chain
// in which every member depends on the one before it, so this order is the
// pattern's own and its last member computes the pattern's output.
using Members = std::vector<const Node*>;

// Lowers the pattern whose members are `m` (LowerGroup calls it when it
// reaches the member PatternLowering::entry names); false, with nothing done,
// when the backend's kernel does not take it.
using Lowering = bool (*)(Builder& b, const Members& m);

struct PatternLowering {
  std::vector<std::string> ops;  ///< op types of the computing members, in order
  std::size_t entry = 0;         ///< index in `ops` of the member it starts at
  Lowering lower = nullptr;
  /// The pattern ends in the Gelu decomposition (its last kGeluNodes ops),
  /// which a chain whose output its Div reads takes as its post-op
  /// (NamedPattern::gelus): MatMulAddGelu's own chain, or a chain of a postdom
  /// group before a Gelu region.
  bool gelu_tail = false;
};

// Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5) (patterns/gelu.onnxtxt).
constexpr std::ptrdiff_t kGeluNodes = 5;

bool LowerGelu(Builder& b, const Members& m) {
  // The pattern's last kGeluNodes members, entered at their Div: the Gelu
  // pattern's own, or what a chain did not take of MatMulAddGelu's.
  const Members gelu(m.end() - kGeluNodes, m.end());
  const Node& div = *gelu.front();
  if (!b.IsAct(div.inputs[0])) return false;
  Absorb(b, gelu);
  EmitGeluKernel(b, div, gelu.back()->outputs[0]);
  return true;
}

bool LowerLayerNorm(Builder& b, const Members& m) {
  // ReduceMean -> Sub -> Pow -> ReduceMean -> Add(., eps) -> Sqrt -> Div -> Mul -> Add
  // (patterns/layer_norm.onnxtxt).
  const Node &mean = *m[0], &var = *m[3], &add_eps = *m[4];
  const ValueId x = mean.inputs[0];
  if (!b.IsAct(x)) return false;
  const Dims dims = b.ActOf(x, mean).dims;
  // Our primitive normalizes the last axis and keeps it (keepdims 1).
  if (!LastAxisMean(mean, dims.size()) || !LastAxisMean(var, dims.size())) return false;
  const ValueId eps = add_eps.inputs[0] == var.outputs[0] ? add_eps.inputs[1] : add_eps.inputs[0];
  if (!b.IsConst(eps)) return false;
  const Tensor& e = b.Const(eps, add_eps);
  if (e.elem_type != onnx::TensorProto::FLOAT || e.NumElements() != 1) return false;
  LayerNormParts parts(x, m[6]->outputs[0], e.data[0], dims.back());
  parts.nodes.assign(m.begin(), m.begin() + 7);
  if (TakeLayerNormAffine(b, *m[7], parts)) TakeLayerNormAffine(b, *m[8], parts);
  EmitLayerNorm(b, parts);
  return true;
}

bool LowerSqueezeExcite(Builder& b, const Members& m) {
  // GlobalAveragePool -> Conv -> Relu | (Sigmoid, Mul) -> Conv -> Sigmoid | HardSigmoid -> Mul
  // (patterns/squeeze_excitation.onnxtxt): the Convs and activations between them.
  const std::size_t fc2 = m.size() - 3;
  SqueezeExcite se;
  se.fc1 = m[1], se.fc2 = m[fc2], se.gate = m[fc2 + 1];
  se.act1.assign(m.begin() + 2, m.begin() + static_cast<std::ptrdiff_t>(fc2));
  se.kind = se.act1.size() == 2 ? SqueezeExcite::Act1::kSwish : SqueezeExcite::Act1::kRelu;
  if (!BindSqueezeExcite(b, se)) return false;
  EmitSqueezeExcite(b, se);
  return true;
}

bool LowerSoftmaxLog(Builder& b, const Members& m) {
  // Softmax -> Log (patterns/softmax_log.onnxtxt).
  if (!b.IsAct(m[0]->inputs[0])) return false;
  Absorb(b, m);
  EmitSoftmaxLog(b, *m[0], m[1]->outputs[0]);
  return true;
}

// InvertedResidualBn<act>[Add]'s members: Conv, BN, the activation's ops,
// three times (the last without activation); PwDwConvBn<act>'s: the first two.
std::vector<std::string> InvertedResidualOps(const std::vector<std::string>& act, int convs, bool add) {
  std::vector<std::string> ops;
  for (int conv = 0; conv < convs; ++conv) {
    ops.insert(ops.end(), {"Conv", "BatchNormalization"});
    if (conv < 2) ops.insert(ops.end(), act.begin(), act.end());
  }
  if (add) ops.push_back("Add");
  return ops;
}

std::map<std::string, PatternLowering> MakeTable() {
  std::map<std::string, PatternLowering> table = {
      {"Gelu", {{"Div", "Erf", "Add", "Mul", "Mul"}, 0, LowerGelu, true}},
      // The MatMul and Add start a chain as in any group; it takes the Gelu
      // by name (NamedPattern::gelus), else LowerGelu runs at the Div.
      {"MatMulAddGelu", {{"MatMul", "Add", "Div", "Erf", "Add", "Mul", "Mul"}, 2, LowerGelu, true}},
      {"LayerNormalization",
       {{"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}, 0, LowerLayerNorm}},
      {"SoftmaxLog", {{"Softmax", "Log"}, 0, LowerSoftmaxLog}},
      {"SEReluSigmoid", {{"GlobalAveragePool", "Conv", "Relu", "Conv", "Sigmoid", "Mul"}, 1, LowerSqueezeExcite}},
      {"SEReluHardSigmoid",
       {{"GlobalAveragePool", "Conv", "Relu", "Conv", "HardSigmoid", "Mul"}, 1, LowerSqueezeExcite}},
      {"SESiLUSigmoid",
       {{"GlobalAveragePool", "Conv", "Sigmoid", "Mul", "Conv", "Sigmoid", "Mul"}, 1, LowerSqueezeExcite}},
      {"SESiLUHardSigmoid",
       {{"GlobalAveragePool", "Conv", "Sigmoid", "Mul", "Conv", "HardSigmoid", "Mul"}, 1, LowerSqueezeExcite}},
  };
  const std::pair<const char*, std::vector<std::string>> activations[] = {
      {"Relu", {"Relu"}}, {"Clip", {"Clip"}}, {"HardSwish", {"HardSwish"}}, {"HardSigmoidMul", {"HardSigmoid", "Mul"}}};
  for (const auto& [name, act] : activations)
    for (bool add : {false, true})
      table[std::string("InvertedResidualBn") + name + (add ? "Add" : "")] = {InvertedResidualOps(act, 3, add), 0,
                                                                              LowerInvertedResidual};
  // The expand and depthwise convolutions of a block with squeeze-and-excitation.
  const std::pair<const char*, std::vector<std::string>> pw_dw_activations[] = {
      {"Relu", {"Relu"}},
      {"Clip", {"Clip"}},
      {"HardSwish", {"HardSwish"}},
      {"HardSigmoidMul", {"HardSigmoid", "Mul"}},
      {"SiLU", {"Sigmoid", "Mul"}}};
  for (const auto& [name, act] : pw_dw_activations)
    table[std::string("PwDwConvBn") + name] = {InvertedResidualOps(act, 2, false), 0, LowerInvertedResidual};
  return table;
}

const std::map<std::string, PatternLowering>& Table() {
  static const std::map<std::string, PatternLowering> table = MakeTable();
  return table;
}

// The computing members of `nodes` when their op types are `ops` (default domain); else empty.
Members MembersAs(const Builder& b, const std::vector<NodeId>& nodes, const std::vector<std::string>& ops) {
  Members members;
  for (NodeId id : nodes) {
    const Node& n = b.graph.node(id);
    if (n.op_type == "Constant" && n.domain.empty()) continue;
    if (members.size() == ops.size() || n.op_type != ops[members.size()] || !n.domain.empty()) return {};
    members.push_back(&n);
  }
  return members.size() == ops.size() ? members : Members{};
}

}  // namespace

bool HasPatternLowering(const std::string& pattern) { return Table().count(pattern) > 0; }

std::vector<std::string> PatternLoweringNames() {
  std::vector<std::string> names;
  for (const auto& [name, lowering] : Table()) names.push_back(name);
  return names;
}

namespace {

// A pattern occurrence the group may lower by name: its lowering and its
// computing members, as PatternLowering::ops.
struct Occurrence {
  const PatternLowering* lowering;
  Members members;
};

void AddOccurrence(const Builder& b, const std::vector<NodeId>& nodes, const std::string& pattern,
                   std::vector<Occurrence>& out) {
  const auto it = Table().find(pattern);
  if (it == Table().end()) return;
  Members members = MembersAs(b, nodes, it->second.ops);
  if (!members.empty()) out.push_back({&it->second, std::move(members)});
}

}  // namespace

void LowerGroupByPattern(Builder& b, const std::vector<NodeId>& nodes, const std::string& pattern,
                         const std::vector<PatternRegion>& regions) {
  std::vector<Occurrence> found;
  AddOccurrence(b, nodes, pattern, found);
  for (const PatternRegion& region : regions) AddOccurrence(b, region.nodes, region.pattern, found);
  if (found.empty()) return LowerGroup(b, nodes);
  std::vector<bool> tried(found.size(), false);
  NamedPattern named;
  named.start = [&](Builder& builder, NodeId id) {
    const Node* node = &builder.graph.node(id);
    for (std::size_t i = 0; i < found.size(); ++i) {
      if (tried[i] || found[i].members[found[i].lowering->entry] != node) continue;
      tried[i] = true;
      if (found[i].lowering->lower(builder, found[i].members)) return true;
    }
    return false;
  };
  for (const Occurrence& o : found)
    if (o.lowering->gelu_tail) named.gelus.emplace_back(o.members.end() - kGeluNodes, o.members.end());
  LowerGroup(b, nodes, &named);
}

}  // namespace onnxfuse::backend
