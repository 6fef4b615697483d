// GroupNormalization-18 and -21 (ONNX Operators.md, GroupNormalization: its
// function body), in opset-17 ops. X [N, C, D1, ...] is seen as [N, G, -1];
// each group is normalized over its last axis with epsilon; then
//   -18: scale and bias of shape [G] apply per group (on the [N, G, -1] view);
//   -21: scale and bias of shape [C] apply per channel (on an [N, C, -1] view).
// The result takes X's shape again.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptGroupNormalization(const onnx::NodeProto& node, DownContext& ctx) {
  if (node.input_size() < 3) ctx.Refuse(node, "needs X, scale and bias");
  const std::int64_t groups = AttrInt(node, "num_groups", 0);
  if (groups <= 0) ctx.Refuse(node, "num_groups must be positive");
  const auto* eps_attr = FindAttribute(node, "epsilon");
  const float eps = eps_attr ? eps_attr->f() : 1e-5f;
  const bool per_channel = ctx.from_opset >= 21;
  const std::string &x = node.input(0), &scale = node.input(1), &bias = node.input(2);
  auto v = [&](const std::string& what) { return ctx.fresh(node.name() + "/" + what); };
  const std::string shape = v("shape"), grouped = v("grouped_shape"), xr = v("grouped"), mean = v("mean"),
                    d = v("centered"), sq = v("squared"), var = v("variance"), e = v("epsilon"), ve = v("variance_eps"),
                    sd = v("std"), n = v("normalized"), column = v("column"), s = v("scale"), b = v("bias"),
                    scaled = v("scaled"), shifted = v("shifted");
  ctx.add_initializer(IntTensor(grouped, {0, groups, -1}));
  ctx.add_initializer(IntTensor(column, {-1, 1}));
  ctx.add_initializer(FloatScalar(e, eps));
  onnx::NodeProto r1 = MakeNode("ReduceMean", {xr}, {mean}, mean), r2 = MakeNode("ReduceMean", {sq}, {var}, var);
  SetInts(r1, "axes", {2});
  SetInts(r2, "axes", {2});
  std::vector<onnx::NodeProto> nodes = {
      MakeNode("Shape", {x}, {shape}, shape),  MakeNode("Reshape", {x, grouped}, {xr}, xr), r1,
      MakeNode("Sub", {xr, mean}, {d}, d),     MakeNode("Mul", {d, d}, {sq}, sq),         r2,
      MakeNode("Add", {var, e}, {ve}, ve),     MakeNode("Sqrt", {ve}, {sd}, sd),          MakeNode("Div", {d, sd}, {n}, n),
      MakeNode("Reshape", {scale, column}, {s}, s), MakeNode("Reshape", {bias, column}, {b}, b)};
  std::string affine_in = n;
  if (per_channel) {  // [N, C, -1]: X's first two dims, then the rest
    const std::string starts = v("starts"), ends = v("ends"), nc = v("nc"), minus1 = v("minus1"), nc_shape = v("nc_shape"),
                      channels = v("per_channel");
    ctx.add_initializer(IntTensor(starts, {0}));
    ctx.add_initializer(IntTensor(ends, {2}));
    ctx.add_initializer(IntTensor(minus1, {-1}));
    onnx::NodeProto concat = MakeNode("Concat", {nc, minus1}, {nc_shape}, nc_shape);
    auto* axis = concat.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    nodes.push_back(MakeNode("Slice", {shape, starts, ends}, {nc}, nc));
    nodes.push_back(concat);
    nodes.push_back(MakeNode("Reshape", {n, nc_shape}, {channels}, channels));
    affine_in = channels;
  }
  nodes.push_back(MakeNode("Mul", {affine_in, s}, {scaled}, scaled));
  nodes.push_back(MakeNode("Add", {scaled, b}, {shifted}, shifted));
  nodes.push_back(MakeNode("Reshape", {shifted, shape}, {node.output(0)}, node.name()));
  return {nodes, std::string("GroupNormalization-") + (per_channel ? "21" : "18") + ": function body, " +
                     (per_channel ? "per-channel" : "per-group") + " scale and bias"};
}

}  // namespace onnxfuse::load
