// Mish-18 (ONNX Operators.md, Mish): y = x * tanh(softplus(x)), its function
// body, in opset-17 ops.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptMish(const onnx::NodeProto& node, DownContext& ctx) {
  const std::string sp = ctx.fresh(node.name() + "/softplus"), t = ctx.fresh(node.name() + "/tanh");
  return {{MakeNode("Softplus", {node.input(0)}, {sp}, sp), MakeNode("Tanh", {sp}, {t}, t),
           MakeNode("Mul", {node.input(0), t}, {node.output(0)}, node.name())},
          "Mish-18: x * tanh(softplus(x))"};
}

}  // namespace onnxfuse::load
