#include "backend/lower/core/operands.h"

#include "backend/lower/core/chain.h"
#include "backend/lower/core/unsupported.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

Arg OpInput(Builder& b, const Node& node, std::size_t i) {
  const auto& md = b.ActOf(node.inputs.at(i), node).md;
  if (b.fuse && (IsPlainEquivalent(md) || IsConvLayout(md))) return b.UseAsIs(node.inputs[i], node);
  return b.UsePlain(node.inputs[i], node);
}

ConvWeights::ConvWeights(Builder& b, const Chain& chain)
    : b_(b), chain_(chain), dims_(b.ConstDims(b.graph.node(chain.anchor).inputs.at(1), b.graph.node(chain.anchor))) {}

const std::vector<float>& ConvWeights::data() {
  if (!data_) {
    const Node& node = b_.graph.node(chain_.anchor);
    data_ = b_.Const(node.inputs.at(1), node).data;
    eval::ScaleWeights(*data_, dims_, eval::WeightLayout::kOutputMajor, 1, chain_.affine.scale);
  }
  return *data_;
}

std::vector<double> BiasOf(Builder& b, const Node& node, std::size_t input, std::int64_t n, double scale) {
  std::vector<double> bias(static_cast<std::size_t>(n), 0.0);
  if (node.inputs.size() <= input || node.inputs[input] == kNoValue) return bias;
  const Tensor& t = b.Const(node.inputs[input], node);
  if (t.NumElements() != 1 && t.NumElements() != n) Unsupported(b, node, "bias must have one value per output");
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = scale * eval::ElementAt(t, t.NumElements() == 1 ? 0 : static_cast<std::int64_t>(i));
  return bias;
}

memory BiasMemory(Builder& b, NodeId anchor, const std::vector<double>& bias, bool as_row) {
  const auto n = static_cast<std::int64_t>(bias.size());
  const memory::desc md = as_row ? PlainDesc({1, n}) : PlainDesc({n});
  std::vector<float> f(bias.begin(), bias.end());
  return b.PackedConstant(anchor, "bias", md, [&] { return b.HostView(md, f.data()); });
}

bool IsRuntimeInput(const Builder& b, const Node& node, std::size_t input) {
  return node.inputs.size() > input && node.inputs[input] != kNoValue && !b.IsConst(node.inputs[input]);
}

Arg RuntimeOperand(Builder& b, ValueId v, const Node& node, const memory::desc& view, const memory::desc& want,
                   const std::string& label) {
  if (!b.IsAct(v)) b.ConstAsAct(v, node);
  Arg plain = b.UsePlain(v, node);
  if (static_cast<std::int64_t>(view.get_size()) > static_cast<std::int64_t>(plain.md.get_size()))
    throw Error(ErrorKind::kInternal,
                "internal error: " + NodeLabel(node) + ": a run-time operand's view is larger than its data");
  plain.md = view;
  if (view == want) return plain;
  if (IsPlainEquivalent(view) && want == PlainDesc(view.dims())) return Arg{plain.slot, want, {}};  // size-1 dims moved
  const Act packed = b.EmitReorder(plain, view.dims(), want, label);
  return Arg{packed.slot, packed.md, {}};
}

}  // namespace onnxfuse::backend
