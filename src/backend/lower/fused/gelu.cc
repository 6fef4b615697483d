// The Gelu (erf form) decomposition exporters write for an op ONNX opset 13
// lacks, run in fused mode as one pass of our Gelu kernel:
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
// The pattern library finds it (patterns/gelu.onnxtxt); its nodes may belong
// to several fusion groups (they are absorbed wherever they are).
#include "backend/lower/fused/gelu.h"

#include "backend/kernels/activation.h"

namespace onnxfuse::backend {

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
