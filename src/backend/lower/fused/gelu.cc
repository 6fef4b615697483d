// The Gelu (erf form) decomposition exporters write for an op ONNX opset 13
// lacks, recognized in fused mode as one pass of our Gelu kernel (as ONNX
// Runtime's level-1 GeluFusion does):
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
// The pattern's inner values must have no other readers; its nodes may belong
// to several fusion groups (they are absorbed wherever they are).
#include "backend/lower/fused/gelu.h"

#include <cmath>

#include "backend/lower/core/graph_queries.h"
#include "backend/kernels/activation.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

std::optional<ValueId> MatchGelu(Builder& b, const Node& div, bool absorb) {
  const NodeId div_id = static_cast<NodeId>(&div - b.graph.nodes().data());
  if (div.op_type != "Div" || !div.domain.empty() || div.inputs.size() != 2 || b.absorbed[div_id]) return std::nullopt;
  // x's readers are the Div and the Mul, so nothing else needs x once the Gelu
  // (or a chain writing it in place) has run.
  const ValueId x = div.inputs[0];
  if (b.graph.value(x).consumers.size() != 2 || !ConstNear(b, div.inputs[1], div, std::sqrt(2.0), 1e-3))
    return std::nullopt;
  const Node* erf = SoleUser(b, div.outputs[0], "Erf");
  const Node* add = erf ? SoleUser(b, erf->outputs[0], "Add") : nullptr;
  if (!add || !ConstNear(b, OtherInput(*add, erf->outputs[0]), *add, 1.0, 1e-6)) return std::nullopt;
  const Node* mul = SoleUser(b, add->outputs[0], "Mul");
  if (!mul || OtherInput(*mul, add->outputs[0]) != x) return std::nullopt;
  const Node* half = SoleUser(b, mul->outputs[0], "Mul");
  if (!half || !ConstNear(b, OtherInput(*half, mul->outputs[0]), *half, 0.5, 1e-6)) return std::nullopt;
  if (absorb) Absorb(b, {&div, erf, add, mul, half});
  return half->outputs[0];
}

void EmitGelu(Builder& b, NodeId div_id) {
  const Node& div = b.graph.node(div_id);
  auto out = MatchGelu(b, div, true);
  Check(out.has_value(), "EmitGelu without a Gelu pattern");
  EmitGeluKernel(b, div, *out);
}

void EmitGeluKernel(Builder& b, const Node& div, ValueId out) {
  const ValueId x = div.inputs[0];
  Arg src = IsDense(b.ActOf(x, div).md) ? b.UseAsIs(x, div) : b.UsePlain(x, div);  // the kernel runs over all bytes
  Act dst = b.NewAct(b.ActOf(x, div).dims, src.md);
  const std::int64_t count = static_cast<std::int64_t>(src.md.get_size() / sizeof(float));
  b.EmitCustom("gelu", div.name + "+Gelu", {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
               [count](const std::vector<void*>& data) {
                 Gelu(static_cast<const float*>(data[0]), static_cast<float*>(data[1]), count);
               },
               dst.md);
  b.SetAct(out, dst);
}

}  // namespace onnxfuse::backend
