#include "backend/lower/ops/grid_sample.h"

#include "backend/kernels/grid_sample.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/kernel_operand.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

bool LowerGridSample(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (node.op_type != "GridSample" || !node.domain.empty() || node.num_explicit_inputs != 2) return false;
  const ValueId x = node.inputs[0], grid = node.inputs[1];
  if (!b.IsAct(x) || StorageOf(b, x, node) != onnx::TensorProto::FLOAT ||
      StorageOf(b, grid, node) != onnx::TensorProto::FLOAT)
    return false;
  const std::string mode_name = AttrString(node, "mode", "bilinear"), padding_name = AttrString(node, "padding_mode", "zeros");
  if (mode_name != "bilinear" && mode_name != "nearest") return false;
  const Dims xd = b.ActOf(x, node).dims, gd = b.DimsOfValue(grid, node);
  if (xd.size() != 4) return false;
  const auto invalid = [&](const std::string& why) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + why);
  };
  GridSamplePadding padding = GridSamplePadding::kZeros;
  if (padding_name == "border") padding = GridSamplePadding::kBorder;
  else if (padding_name == "reflection") padding = GridSamplePadding::kReflection;
  else if (padding_name != "zeros") invalid("unknown padding_mode '" + padding_name + "'");
  if (gd.size() != 4 || gd[0] != xd[0] || gd[3] != 2)
    invalid("grid of shape " + DimsString(gd) + " for X of shape " + DimsString(xd) + " (expected [N, H_out, W_out, 2])");
  const GridSampleShape shape{xd[0], xd[1], xd[2], xd[3], gd[1], gd[2]};
  const GridSampleMode mode = mode_name == "nearest" ? GridSampleMode::kNearest : GridSampleMode::kBilinear;
  const bool align_corners = AttrInt(node, "align_corners", 0) != 0;

  std::vector<std::pair<int, Arg>> args;
  const KernelOperand<float> image = FloatKernelOperand(b, x, node, args), points = FloatKernelOperand(b, grid, node, args);
  const Dims out = {shape.n, shape.c, shape.ho, shape.wo};
  const Act dst = b.NewAct(out, PlainDesc(out));
  const int dst_arg = static_cast<int>(args.size());
  args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
  CustomKernel kernel = [=](const std::vector<void*>& data) {
    GridSample2d(image.Data(data), points.Data(data), static_cast<float*>(data[static_cast<std::size_t>(dst_arg)]), shape,
                 mode, padding, align_corners);
  };
  b.EmitCustom("grid_sample", node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:grid_sample");
  b.SetAct(node.outputs[0], dst);
  return true;
}

}  // namespace onnxfuse::backend
