// Reduce*-18 (ONNX Changelog.md, ReduceMax-18 & co.): `axes` moved from an
// attribute to an optional second input; noop_with_empty_axes came with it.
// At 17 (ReduceSum aside, which made the same move at 13) axes are an
// attribute: a constant axes input becomes one. Empty axes with
// noop_with_empty_axes = 1 is the identity.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptReduce(const onnx::NodeProto& node, DownContext& ctx) {
  onnx::NodeProto out = node;
  std::vector<std::int64_t> axes;
  if (node.input_size() > 1 && !node.input(1).empty()) {
    auto values = ctx.Ints(node.input(1));
    if (!values) ctx.Refuse(node, "axes '" + node.input(1) + "' is computed at run time; opset 17 needs it constant");
    axes = *values;
  }
  const bool noop = AttrInt(node, "noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop) {
    onnx::NodeProto id = MakeNode("Identity", {node.input(0)}, {node.output(0)}, node.name());
    return {{id}, node.op_type() + "-18: no axes and noop_with_empty_axes -> Identity"};
  }
  out.mutable_input()->DeleteSubrange(1, out.input_size() - 1);
  RemoveAttribute(out, "noop_with_empty_axes");
  if (!axes.empty()) SetInts(out, "axes", axes);
  return {{out}, node.op_type() + "-18: axes input -> axes attribute"};
}

}  // namespace onnxfuse::load
