// Resize-18 (ONNX Changelog.md) added `antialias`, `keep_aspect_ratio_policy`
// and the `axes` attribute; Resize-19 added coordinate_transformation_mode
// "half_pixel_symmetric". With their defaults (antialias 0, policy "stretch",
// no axes) the op is Resize-13; anything else is refused.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptResize(const onnx::NodeProto& node, DownContext& ctx) {
  if (AttrInt(node, "antialias", 0) != 0) ctx.Refuse(node, "antialias = 1 has no equivalent at opset 17");
  if (AttrString(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    ctx.Refuse(node, "keep_aspect_ratio_policy other than 'stretch' has no equivalent at opset 17");
  if (FindAttribute(node, "axes")) ctx.Refuse(node, "the axes attribute has no equivalent at opset 17");
  if (AttrString(node, "coordinate_transformation_mode", "half_pixel") == "half_pixel_symmetric")
    ctx.Refuse(node, "coordinate_transformation_mode 'half_pixel_symmetric' has no equivalent at opset 17");
  onnx::NodeProto out = node;
  RemoveAttribute(out, "antialias");
  RemoveAttribute(out, "keep_aspect_ratio_policy");
  return {{out}, "Resize-18: default antialias and keep_aspect_ratio_policy dropped"};
}

}  // namespace onnxfuse::load
