// Split-18 (ONNX Changelog.md): the `num_outputs` attribute splits into that
// many parts of ceil(length / num_outputs), the last one smaller when the
// axis does not divide evenly. Split-13 without its `split` input splits
// evenly into one part per output: the same when the axis divides evenly (or
// its length is not known: shape inference then checks it); otherwise the
// sizes become the `split` input.
#include <algorithm>

#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptSplit(const onnx::NodeProto& node, DownContext& ctx) {
  if (!FindAttribute(node, "num_outputs")) return {{node}, ""};  // Split-13's form: unchanged
  const std::int64_t parts = AttrInt(node, "num_outputs", 0);
  if (parts != node.output_size()) ctx.Refuse(node, "num_outputs differs from the number of outputs");
  onnx::NodeProto out = node;
  RemoveAttribute(out, "num_outputs");
  const auto dims = ctx.dims(node.input(0));
  std::int64_t axis = AttrInt(node, "axis", 0);
  if (dims && axis < 0) axis += static_cast<std::int64_t>(dims->size());
  if (!dims || axis < 0 || axis >= static_cast<std::int64_t>(dims->size()) || (*dims)[axis] < 0 ||
      (*dims)[axis] % parts == 0)
    return {{out}, "Split-18: num_outputs -> even parts, one per output"};
  const std::int64_t length = (*dims)[axis], size = (length + parts - 1) / parts;
  std::vector<std::int64_t> sizes;
  for (std::int64_t k = 0, left = length; k < parts; ++k, left -= size) sizes.push_back(std::max<std::int64_t>(0, std::min(size, left)));
  const std::string name = ctx.fresh(node.name() + "/split");
  ctx.add_initializer(IntTensor(name, sizes));
  out.mutable_input()->DeleteSubrange(1, out.input_size() - 1);
  out.add_input(name);
  return {{out}, "Split-18: num_outputs -> split input (uneven parts)"};
}

}  // namespace onnxfuse::load
