// AveragePool-19 (ONNX Changelog.md) added `dilations`; LpPool-18 added
// `ceil_mode`. Dilations of 1 and ceil_mode 0 are the opset-17 ops.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptPooling(const onnx::NodeProto& node, DownContext& ctx) {
  onnx::NodeProto out = node;
  if (node.op_type() == "AveragePool") {
    if (const auto* d = FindAttribute(node, "dilations"))
      for (auto v : d->ints())
        if (v != 1) ctx.Refuse(node, "dilations other than 1 have no equivalent at opset 17");
    RemoveAttribute(out, "dilations");
    return {{out}, "AveragePool-19: dilations of 1 dropped"};
  }
  if (AttrInt(node, "ceil_mode", 0) != 0) ctx.Refuse(node, "ceil_mode = 1 has no equivalent at opset 17");
  RemoveAttribute(out, "ceil_mode");
  return {{out}, "LpPool-18: ceil_mode 0 dropped"};
}

}  // namespace onnxfuse::load
