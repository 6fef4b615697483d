// Building chains (chain.h): which node starts one, and which following group
// member it absorbs as a folded BatchNormalization or a post-op.
// backend/lower/core/lower_group.cc walks a group with them;
// backend/lower/core/chain_emit.cc turns a chain into steps.
#include "backend/lower/core/chain.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/views.h"
#include "backend/lower/fused/int8_add.h"
#include "backend/lower/ops/batch_norm.h"
#include "backend/lower/ops/binary.h"
#include "backend/lower/ops/broadcast_binary.h"
#include "backend/lower/ops/eltwise.h"
#include "backend/lower/ops/matmul.h"
#include "ir/attributes.h"

namespace onnxfuse::backend {

namespace {

using Kind = PostOp::Kind;
constexpr std::size_t kMaxPostOps = 32;  // oneDNN's limit

}  // namespace

bool IsBinaryOp(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div"; }

bool StartsChain(Builder& b, const Node& node) {
  const std::string& op = node.op_type;
  if (!node.domain.empty()) return false;
  if (op == "MatMul") return !IsMatMulOfVector(b, node);
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "BatchNormalization") return true;
  if (QuantizedAddOf(b, node)) return true;  // its inputs are integer tensors (int8_add.h)
  if (!IsBinaryOp(op) || (!b.IsAct(node.inputs[0]) && !b.IsAct(node.inputs[1]))) return false;
  // oneDNN's binary writes over src0's shape: one input must be an activation
  // of the output's shape. Otherwise (both broadcast: [256,1,1,2] + [1,7,7,2]
  // in RAFT) the node is LowerBroadcastBinary's.
  const Dims d0 = b.DimsOfValue(node.inputs.at(0), node), d1 = b.DimsOfValue(node.inputs.at(1), node);
  Dims out;
  try {
    out = BroadcastDims(d0, d1);
  } catch (const std::invalid_argument&) {
    return true;  // EmitBinary names the node and the shapes
  }
  // Nor when oneDNN's binary would run its reference kernel on the node's
  // plain operands, or be generated again at every shape a session compiles
  // (BinaryRunsOnOwnKernel): LowerBroadcastBinary's too.
  return ((b.IsAct(node.inputs[0]) && d0 == out) || (b.IsAct(node.inputs[1]) && d1 == out)) &&
         !BinaryRunsOnOwnKernel(b, node);
}

namespace {

// Fully known inferred dims of a value, or empty.
Dims KnownDims(const Builder& b, ValueId v) {
  const TensorType& t = b.graph.value(v).type;
  if (!t.has_shape) return {};
  for (auto d : t.dims)
    if (d < 0) return {};
  return t.dims;
}

// The consumers of `v`, as a sorted list with one entry per use.
std::vector<NodeId> Uses(const Builder& b, ValueId v) {
  auto uses = b.graph.value(v).consumers;
  std::sort(uses.begin(), uses.end());
  return uses;
}

bool FoldBatchNorm(Builder& b, Chain& chain, const Node& bn) {
  const std::string& anchor = b.graph.node(chain.anchor).op_type;
  if ((anchor != "Conv" && anchor != "ConvTranspose" && anchor != "Gemm") || !chain.post_ops.empty()) return false;
  // Weights known only at run time cannot take the scale at build time.
  const Node& anchor_node = b.graph.node(chain.anchor);
  if (IsRuntimeInput(b, anchor_node, 1) || IsRuntimeInput(b, anchor_node, 2)) return false;
  if (bn.outputs.size() > 1) return false;
  std::optional<eval::ChannelAffine> affine = BatchNormAffine(b, bn);
  if (!affine) return false;
  const std::size_t channels = affine->scale.size();
  if (!chain.affine.scale.empty() && chain.affine.scale.size() != channels) return false;
  chain.affine = chain.affine.scale.empty() ? *std::move(affine) : eval::ComposeAffine(chain.affine, *affine);
  return true;
}

// Sigmoid(x) * x -> swish; HardSigmoid(x) * x -> hardswish (when alpha = 1/6, beta = 1/2).
NodeId GatedMul(Builder& b, const Chain& chain, const Node& gate, const std::vector<NodeId>& group) {
  auto uses = Uses(b, chain.out);
  if (uses.size() != 2 || gate.outputs.size() != 1) return kNoNode;
  auto gate_uses = b.graph.value(gate.outputs[0]).consumers;
  if (gate_uses.size() != 1) return kNoNode;
  NodeId mul = gate_uses[0];
  const Node& m = b.graph.node(mul);
  if (m.op_type != "Mul" || std::find(group.begin(), group.end(), mul) == group.end()) return kNoNode;
  bool pair = (m.inputs[0] == chain.out && m.inputs[1] == gate.outputs[0]) ||
              (m.inputs[1] == chain.out && m.inputs[0] == gate.outputs[0]);
  return pair && std::find(uses.begin(), uses.end(), mul) != uses.end() ? mul : kNoNode;
}

bool AttachBinary(Builder& b, Chain& chain, const Node& node) {
  int main = node.inputs[0] == chain.out ? 0 : 1;
  ValueId other = node.inputs[static_cast<std::size_t>(1 - main)];
  if (other == chain.out || node.inputs[static_cast<std::size_t>(main)] != chain.out) return false;
  Dims out = KnownDims(b, chain.out), result = KnownDims(b, node.outputs[0]);
  if (out.empty() || out != result) return false;  // the main path must not broadcast
  const std::string& op = node.op_type;
  PostOp po;
  if (b.IsConst(other)) {
    const Tensor& c = b.Const(other, node);
    if (c.elem_type != onnx::TensorProto::FLOAT) return false;
    if (c.NumElements() == 1) {  // scalar: one linear eltwise
      float k = c.data[0];
      po.alg = dnnl::algorithm::eltwise_linear;
      if (op == "Add") po.alpha = 1, po.beta = k;
      else if (op == "Mul") po.alpha = k, po.beta = 0;
      else if (op == "Sub") po.alpha = main == 0 ? 1.f : -1.f, po.beta = main == 0 ? -k : k;
      else if (op == "Div" && main == 0 && k != 0) po.alpha = 1 / k, po.beta = 0;
      else return false;
      chain.post_ops.push_back(po);
      return true;
    }
    if (main == 1 && (op == "Sub" || op == "Div")) return false;
    if (op == "Div") return false;  // see below: a binary_div post-op makes padded channels 0/0
    po.kind = Kind::kBinary;
    po.constant = c;
    po.constant->dims = ExpandRank(c.dims, out.size());
  } else {
    // A binary_div post-op divides the padded channels of a blocked
    // destination too (2 channels of nChw8c: 6 zeros), by the operand's zero
    // padding: 0/0 = NaN there, which the next convolution reads (its zero
    // weights times NaN). Div by a tensor runs as a step of its own.
    if (!b.IsAct(other) || op == "Div" || (main == 1 && op == "Sub")) return false;
    bool has_sum = std::any_of(chain.post_ops.begin(), chain.post_ops.end(),
                               [](const PostOp& p) { return p.kind == Kind::kSum; });
    // `sum` accumulates into the destination of a (de)convolution or matmul.
    const std::string& anchor = b.graph.node(chain.anchor).op_type;
    bool sum_anchor = anchor == "Conv" || anchor == "ConvTranspose" || anchor == "Gemm" || anchor == "MatMul";
    po.kind = op == "Add" && sum_anchor && !has_sum && b.ActOf(other, node).dims == out ? Kind::kSum : Kind::kBinary;
    po.operand = other;
  }
  po.alg = op == "Add" ? dnnl::algorithm::binary_add
           : op == "Sub" ? dnnl::algorithm::binary_sub
           : op == "Mul" ? dnnl::algorithm::binary_mul
                         : dnnl::algorithm::binary_div;
  chain.post_ops.push_back(std::move(po));
  return true;
}

// The Gelu of NamedPattern::gelus whose Div is `div`, when nothing else reads
// the Div's input x, the chain's output: the Gelu kernel overwrites x in place
// (Flush). Absorbs its nodes; nullopt, with nothing done, otherwise. The
// library matched the nodes; this is the in-place condition only.
std::optional<ValueId> TakeNamedGelu(Builder& b, const NamedPattern& named, const Node& div) {
  for (const std::vector<const Node*>& gelu : named.gelus) {
    if (gelu.front() != &div) continue;
    if (b.graph.value(div.inputs[0]).consumers.size() != 2) return std::nullopt;  // the Div and the Mul
    Absorb(b, gelu);
    return gelu.back()->outputs[0];
  }
  return std::nullopt;
}

// Absorbs `id` into the chain when it only extends the chain's output; a Gelu
// only when the library named it (`named`).
bool TryAttach(Builder& b, Chain& chain, NodeId id, const std::vector<NodeId>& group, const NamedPattern* named) {
  const Node& node = b.graph.node(id);
  const Node& anchor = b.graph.node(chain.anchor);
  if (!node.domain.empty() || b.graph.value(chain.out).is_graph_output || chain.post_ops.size() + 2 > kMaxPostOps)
    return false;
  if (node.outputs.empty() || node.inputs.empty()) return false;
  auto uses = Uses(b, chain.out);
  bool sole_use = uses.size() == 1 && uses[0] == id;
  // The batch normalization primitive takes no post-ops, and its fused Relu
  // (fuse_norm_relu) turns NaN into 0: a Relu after it is a step of its own.
  if (anchor.op_type == "BatchNormalization") return false;
  bool extend = false;
  if (node.op_type == "BatchNormalization") {
    extend = sole_use && node.inputs[0] == chain.out && FoldBatchNorm(b, chain, node);
  } else if (node.op_type == "Div" && !sole_use && node.inputs[0] == chain.out) {
    // Gelu's decomposition reads x twice (Div and the Mul): taken whole, its nodes consumed.
    const std::optional<ValueId> gelu = named ? TakeNamedGelu(b, *named, node) : std::nullopt;
    if (!gelu) return false;
    chain.post_ops.push_back(PostOp{Kind::kEltwise, dnnl::algorithm::eltwise_gelu_erf, 0, 0, kNoValue, {}});
    chain.members.push_back(id);
    chain.out = *gelu;
    return true;
  } else if (IsBinaryOp(node.op_type)) {
    extend = sole_use && AttachBinary(b, chain, node);
  } else if (node.inputs[0] == chain.out) {
    if (node.op_type == "Sigmoid" || node.op_type == "HardSigmoid") {
      NodeId mul = GatedMul(b, chain, node, group);
      float alpha = AttrFloat(node, "alpha", 0.2f), beta = AttrFloat(node, "beta", 0.5f);
      bool hard_swish = node.op_type == "HardSigmoid" && std::fabs(alpha - 1.f / 6) < 1e-6f && beta == 0.5f;
      if (mul != kNoNode && (node.op_type == "Sigmoid" || hard_swish)) {
        PostOp po;
        po.alg = hard_swish ? dnnl::algorithm::eltwise_hardswish : dnnl::algorithm::eltwise_swish;
        po.alpha = hard_swish ? 1.f / 6 : 1.f;
        po.beta = hard_swish ? 0.5f : 0.f;
        chain.post_ops.push_back(po);
        const Node& m = b.graph.node(mul);
        b.Consume(node), b.Consume(m);
        chain.members.push_back(id), chain.members.push_back(mul);
        b.absorbed[mul] = true;
        chain.out = m.outputs[0];
        return true;
      }
    }
    if (sole_use) {
      auto ops = EltwiseOf(b, node);
      extend = !ops.empty();
      for (auto& po : ops) chain.post_ops.push_back(po);
    }
  }
  if (!extend) return false;
  b.Consume(node);
  chain.members.push_back(id);
  chain.out = node.outputs[0];
  return true;
}

}  // namespace

bool Attach(Builder& b, Chain& chain, NodeId id, const std::vector<NodeId>& group, const NamedPattern* named) {
  const std::size_t first_op = chain.post_ops.size(), member = chain.members.size();
  if (!TryAttach(b, chain, id, group, named)) return false;
  for (std::size_t i = first_op; i < chain.post_ops.size(); ++i) chain.post_ops[i].member = member;
  MergeLinearSteps(chain.post_ops);
  return true;
}

void MergeLinearSteps(std::vector<PostOp>& post_ops) {
  auto linear = [](const PostOp& p) { return p.kind == Kind::kEltwise && p.alg == dnnl::algorithm::eltwise_linear; };
  std::vector<PostOp> merged;
  for (PostOp& po : post_ops) {
    if (merged.empty() || !linear(merged.back()) || !linear(po)) {
      merged.push_back(std::move(po));
      continue;
    }
    PostOp& first = merged.back();  // in double: one rounding per parameter
    const double alpha = static_cast<double>(po.alpha) * first.alpha;
    const double beta = static_cast<double>(po.alpha) * first.beta + po.beta;
    first.alpha = static_cast<float>(alpha), first.beta = static_cast<float>(beta);
  }
  post_ops = std::move(merged);
}

}  // namespace onnxfuse::backend
