// Ops that gained an attribute after opset 17 whose default is the old
// behaviour (ONNX Changelog.md): with the default they are the opset-17 op.
//   Cast-19, CastLike-19: saturate (only meaningful for float8 targets);
//   ScatterElements-18, ScatterND-18: reduction "max" and "min" are new;
//   GridSample-20: modes renamed (bilinear -> linear, bicubic -> cubic), 3-D inputs.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptNewDefaults(const onnx::NodeProto& node, DownContext& ctx) {
  onnx::NodeProto out = node;
  const std::string& op = node.op_type();
  if (op == "Cast" || op == "CastLike") {
    if (!FindAttribute(node, "saturate")) return {{node}, ""};
    RemoveAttribute(out, "saturate");
    return {{out}, op + "-19: saturate dropped (no float8 target)"};
  }
  if (op == "ScatterElements" || op == "ScatterND") {
    const std::string r = AttrString(node, "reduction", "none");
    if (r == "max" || r == "min") ctx.Refuse(node, "reduction '" + r + "' has no equivalent at opset 17");
    return {{node}, ""};
  }
  if (op == "GridSample" && ctx.from_opset >= 20) {
    const std::string mode = AttrString(node, "mode", "linear");
    const auto dims = ctx.dims(node.input(0));
    if (dims && dims->size() != 4) ctx.Refuse(node, "a " + std::to_string(dims->size()) + "-D input has no equivalent at opset 17");
    RemoveAttribute(out, "mode");
    auto* a = out.add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode == "linear" ? "bilinear" : mode == "cubic" ? "bicubic" : mode);
    return {{out}, "GridSample-20: mode '" + mode + "' -> its opset-16 name"};
  }
  return {{node}, ""};
}

}  // namespace onnxfuse::load
