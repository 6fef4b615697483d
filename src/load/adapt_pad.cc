// Pad-18 (ONNX Changelog.md) added the optional `axes` input: `pads` then
// holds begin and end amounts for those axes only. Pad-13 takes amounts for
// every axis: those of the listed axes, 0 elsewhere, which needs the input's
// rank. Pad-19 added mode "wrap", which opset 17 cannot express.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptPad(const onnx::NodeProto& node, DownContext& ctx) {
  if (AttrString(node, "mode", "constant") == "wrap") ctx.Refuse(node, "mode 'wrap' has no equivalent at opset 17");
  if (node.input_size() < 4 || node.input(3).empty()) return {{node}, ""};
  const auto axes = ctx.Ints(node.input(3));
  const auto pads = ctx.Ints(node.input(1));
  if (!axes || !pads) ctx.Refuse(node, "pads and axes must be constants to be written for every axis at opset 17");
  const auto dims = ctx.dims(node.input(0));
  if (!dims) ctx.MissingDims(node, node.input(0));
  const auto rank = static_cast<std::int64_t>(dims->size());
  if (static_cast<std::int64_t>(pads->size()) != 2 * static_cast<std::int64_t>(axes->size()))
    ctx.Refuse(node, "pads has " + std::to_string(pads->size()) + " values for " + std::to_string(axes->size()) + " axes");
  std::vector<std::int64_t> full(static_cast<std::size_t>(2 * rank), 0);
  for (std::size_t k = 0; k < axes->size(); ++k) {
    std::int64_t a = (*axes)[k] < 0 ? (*axes)[k] + rank : (*axes)[k];
    if (a < 0 || a >= rank) ctx.Refuse(node, "axis " + std::to_string((*axes)[k]) + " is out of range");
    full[static_cast<std::size_t>(a)] = (*pads)[k];
    full[static_cast<std::size_t>(a + rank)] = (*pads)[k + axes->size()];
  }
  const std::string name = ctx.fresh(node.name() + "/pads");
  ctx.add_initializer(IntTensor(name, full));
  onnx::NodeProto out = node;
  out.set_input(1, name);
  out.mutable_input()->DeleteSubrange(3, out.input_size() - 3);
  while (out.input_size() > 2 && out.input(out.input_size() - 1).empty()) out.mutable_input()->RemoveLast();
  return {{out}, "Pad-18: pads of listed axes -> pads of every axis"};
}

}  // namespace onnxfuse::load
