// Resize (opsets 10, 11, 13, 18): oneDNN's resampling_forward when it computes
// exactly what ONNX asks, otherwise our own separable loops (backend/kernels/resize.h).
//
//   X [D0..Dk], scales [rank] (float) or sizes [rank] (int64), both constant;
//   tf_crop_and_resize's roi [2 * rank] constant too. Opset 18's `axes` lists
//   the axes scales/sizes/roi are given for (the others keep their size).
//   out_i = sizes_i, or floor(in_i * scales_i); the scale ONNX maps coordinates
//   with is scales_i, or out_i / in_i when sizes are given.
//
// ONNX's pixel grid (coordinate transformations, rounding, weights) is
// backend/kernels/resize.h's. oneDNN 2.6 resampling (dev_guide_resampling;
// cpu/resampling_utils.hpp) maps with half_pixel and scale = out / in, in
// float: x = (y + 0.5f) * in / out - 0.5f; nearest takes roundf(x) (ties away
// from zero), linear the clamped neighbours floor(x), floor(x) + 1. Rather
// than reason per mode, OneDnnDifference compares both maps output index by
// output index (nearest: the index; linear: both neighbours and the weight, to
// 1e-5) along every spatial axis: half_pixel linear with scale = out / in,
// integer nearest upsampling with any transformation whose rounding has no
// ties, and so on, run on oneDNN in any layout. The rest (cubic,
// align_corners, tf_crop_and_resize, other roundings, resized batch or
// channel axes) runs on the sample tables in plain layout.
// antialias and keep_aspect_ratio_policy other than stretch (opset 18) are refused.
// Run-time scales, sizes or roi, and Upsample-7, are the host evaluator's
// (ResizeOnOneDnn; host_eval_sample.h).
#include "backend/lower/ops/resize.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"
#include "backend/kernels/resize.h"

namespace onnxfuse::backend {

namespace {

struct Linear {
  std::int64_t i0 = 0, i1 = 0;
  double w1 = 0;  // weight of i1; 0 when both neighbours are the same
};

Linear Canonical(std::int64_t i0, std::int64_t i1, double w1) {
  if (i0 == i1 || w1 == 0) return {i0, i0, 0};
  if (w1 == 1) return {i1, i1, 0};
  return {i0, i1, w1};
}

// oneDNN's mapping of output index y (float arithmetic, as its kernels).
float OneDnnCoordinate(std::int64_t y, std::int64_t in, std::int64_t out) {
  return (static_cast<float>(y) + 0.5f) * static_cast<float>(in) / static_cast<float>(out) - 0.5f;
}

std::int64_t OneDnnNearest(std::int64_t y, std::int64_t in, std::int64_t out) {
  auto i = static_cast<std::int64_t>(std::roundf(OneDnnCoordinate(y, in, out)));
  return std::clamp<std::int64_t>(i, 0, in - 1);
}

Linear OneDnnLinear(std::int64_t y, std::int64_t in, std::int64_t out) {
  float s = OneDnnCoordinate(y, in, out);
  std::int64_t i0 = std::max<std::int64_t>(static_cast<std::int64_t>(s), 0);  // truncation, as oneDNN
  std::int64_t i1 = s < 0 ? 0 : static_cast<std::int64_t>(std::ceil(s));
  i1 = std::min(i1, in - 1);
  return Canonical(i0, i1, std::fabs(static_cast<double>(s) - static_cast<double>(i0)));
}

// Empty when oneDNN's resampling computes the sample tables `axes` of X
// [in], else the first thing that differs.
std::string OneDnnDifference(const ResizeMode& mode, const Dims& in, const std::vector<AxisSamples>& axes) {
  if (mode.mode != "nearest" && mode.mode != "linear") return "oneDNN resampling has nearest and linear only";
  if (mode.opset >= 11 && mode.transform == "tf_crop_and_resize") return "oneDNN resampling does not crop";
  if (in.size() < 3 || in.size() > 5) return "oneDNN resampling takes 1-D to 3-D spatial data (X of rank 3 to 5)";
  if (!axes[0].Identity() || !axes[1].Identity()) return "oneDNN resampling keeps the batch and channel axes";
  for (std::size_t d = 2; d < in.size(); ++d) {
    const AxisSamples& s = axes[d];
    // Along an axis of length 1 every output is the one input, which our
    // loops copy; oneDNN still weighs it with itself (a (1 - w) + a w), which
    // can round 1 ulp off a and so break a tie a later TopK or ArgMax sees.
    if (mode.mode == "linear" && s.in == 1 && s.out > 1)
      return "axis " + std::to_string(d) + " has length 1: a broadcast, which oneDNN's linear weights round";
    for (std::int64_t y = 0; y < s.out; ++y) {
      const auto at = static_cast<std::size_t>(y * s.taps);
      if (mode.mode == "nearest") {
        const std::int64_t o = s.index[at], n = OneDnnNearest(y, s.in, s.out);
        if (o != n)
          return "axis " + std::to_string(d) + ", output index " + std::to_string(y) + " maps to input " +
                 std::to_string(o) + " where oneDNN reads " + std::to_string(n);
      } else {
        const Linear o = Canonical(s.index[at], s.index[at + 1], s.weight[at + 1]), n = OneDnnLinear(y, s.in, s.out);
        if (o.i0 != n.i0 || o.i1 != n.i1 || std::fabs(o.w1 - n.w1) > 1e-5)
          return "axis " + std::to_string(d) + ", output index " + std::to_string(y) + " maps to inputs " +
                 std::to_string(o.i0) + ".." + std::to_string(o.i1) + " weight " + std::to_string(o.w1) +
                 " where oneDNN interpolates " + std::to_string(n.i0) + ".." + std::to_string(n.i1) + " weight " +
                 std::to_string(n.w1);
      }
    }
  }
  return "";
}

ResizeMode ModeOf(const Builder& b, const Node& node, int opset) {
  ResizeMode m;
  m.opset = opset;
  m.mode = AttrString(node, "mode", "nearest");
  m.transform = opset >= 11 ? AttrString(node, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
  m.nearest_mode = AttrString(node, "nearest_mode", "round_prefer_floor");
  m.cubic_coeff_a = AttrFloat(node, "cubic_coeff_a", -0.75f);
  m.exclude_outside = AttrInt(node, "exclude_outside", 0) != 0;
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    Unsupported(b, node, "mode '" + m.mode + "' is not nearest, linear or cubic");
  const std::string& t = m.transform;
  if (t != "half_pixel" && t != "pytorch_half_pixel" && t != "asymmetric" && t != "align_corners" &&
      t != "tf_half_pixel_for_nn" && t != "tf_crop_and_resize")
    Unsupported(b, node, "coordinate_transformation_mode '" + t + "' is not supported");
  const std::string& nm = m.nearest_mode;
  if (m.mode == "nearest" && nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    Unsupported(b, node, "nearest_mode '" + nm + "' is not supported");
  if (AttrInt(node, "antialias", 0) != 0) Unsupported(b, node, "antialias=1 is not supported");
  if (AttrString(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    Unsupported(b, node, "keep_aspect_ratio_policy '" + AttrString(node, "keep_aspect_ratio_policy", "") + "'");
  return m;
}

}  // namespace

bool ResizeOnOneDnn(const Builder& b, const Node& node) {
  const std::int64_t opset = b.graph.opset();
  const bool upsample = node.op_type == "Upsample";
  if (upsample && opset != 9) return false;  // Upsample-7: scales is an attribute
  if (node.inputs.empty() || !b.IsAct(node.inputs[0])) return false;
  auto runtime = [&](std::size_t i) {
    return node.num_explicit_inputs > i && node.inputs[i] != kNoValue && !b.IsConst(node.inputs[i]);
  };
  if (upsample || opset < 11) return !runtime(1);  // X, scales
  const bool crop = AttrString(node, "coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  return !runtime(2) && !runtime(3) && !(crop && runtime(1));  // X, roi, scales, sizes
}

void EmitResize(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const int opset = static_cast<int>(b.graph.opset());
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  const Dims in = b.ActOf(node.inputs[0], node).dims;
  const ResizeMode mode = ModeOf(b, node, opset);

  // scales / sizes / roi, per axis of X.
  const std::size_t rank = in.size();
  auto input = [&](std::size_t i) { return node.num_explicit_inputs > i && node.inputs[i] != kNoValue ? node.inputs[i] : kNoValue; };
  ValueId scales_v = input(opset >= 11 ? 2 : 1), sizes_v = opset >= 11 ? input(3) : kNoValue;
  Dims axes;
  for (auto a : AttrInts(node, "axes")) axes.push_back(a < 0 ? a + static_cast<std::int64_t>(rank) : a);
  if (axes.empty())
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<std::int64_t>(d));
  for (auto a : axes)
    if (a < 0 || a >= static_cast<std::int64_t>(rank)) Unsupported(b, node, "axes out of range");
  std::vector<AxisResize> resize(rank);
  for (std::size_t d = 0; d < rank; ++d) resize[d] = {in[d], in[d], 1.0, static_cast<double>(in[d]), 0, 1};
  std::vector<std::int64_t> sizes;
  if (sizes_v != kNoValue) sizes = eval::AsInts(b.Const(sizes_v, node));
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) Unsupported(b, node, "sizes must have one entry per resized axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      AxisResize& r = resize[static_cast<std::size_t>(axes[k])];
      r.out = sizes[k];
      r.scale = static_cast<double>(sizes[k]) / static_cast<double>(r.in);
      r.length_resized = static_cast<double>(sizes[k]);
    }
  } else {
    if (scales_v == kNoValue) Unsupported(b, node, "neither scales nor sizes is given");
    const Tensor& s = b.Const(scales_v, node);
    if (static_cast<std::size_t>(s.NumElements()) != axes.size()) Unsupported(b, node, "scales must have one entry per resized axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      AxisResize& r = resize[static_cast<std::size_t>(axes[k])];
      auto f = static_cast<float>(eval::ElementAt(s, static_cast<std::int64_t>(k)));
      if (!(f > 0)) Unsupported(b, node, "scales must be positive");
      r.scale = f;
      r.out = static_cast<std::int64_t>(std::floor(static_cast<float>(r.in) * f));
      r.length_resized = static_cast<double>(r.in) * r.scale;
    }
  }
  if (opset >= 11 && mode.transform == "tf_crop_and_resize") {
    if (input(1) == kNoValue) Unsupported(b, node, "tf_crop_and_resize needs roi");
    const Tensor& roi = b.Const(input(1), node);
    if (static_cast<std::size_t>(roi.NumElements()) != 2 * axes.size())
      Unsupported(b, node, "roi must have two entries per resized axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      AxisResize& r = resize[static_cast<std::size_t>(axes[k])];
      r.roi_start = eval::ElementAt(roi, static_cast<std::int64_t>(k));
      r.roi_end = eval::ElementAt(roi, static_cast<std::int64_t>(k + axes.size()));
    }
  }
  Dims out = in;
  std::vector<AxisSamples> samples;
  for (std::size_t d = 0; d < rank; ++d) {
    out[d] = resize[d].out;
    if (out[d] < 1) Unsupported(b, node, "empty output along axis " + std::to_string(d));
    samples.push_back(SampleAxis(mode, resize[d]));
  }

  const std::string differs = OneDnnDifference(mode, in, samples);
  if (differs.empty()) {
    const auto alg = mode.mode == "nearest" ? dnnl::algorithm::resampling_nearest : dnnl::algorithm::resampling_linear;
    using ResamplingPd = dnnl::resampling_forward::primitive_desc;
    auto desc = [&](const dnnl::memory::desc& src_md) {
      return dnnl::resampling_forward::desc(dnnl::prop_kind::forward_inference, alg, src_md,
                                            b.fuse ? AnyDesc(out) : PlainDesc(out));
    };
    Arg src = OpInput(b, node, 0);
    ResamplingPd pd;
    try {
      pd = ResamplingPd(desc(src.md), b.Attr(), b.engine);
    } catch (const dnnl::error&) {  // a layout the kernel does not take: plain
      src = b.UsePlain(node.inputs[0], node);
      pd = MakePd<ResamplingPd>(b, node, desc(src.md), b.Attr());
    }
    Act dst = b.NewAct(out, pd.dst_desc());
    b.Emit(pd, "resampling", node.name, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}}, dst.md);
    b.SetAct(node.outputs[0], dst);
    return;
  }

  spdlog::debug("{}: mode '{}' with coordinate_transformation_mode '{}' runs on our own loops: {}", NodeLabel(node),
                mode.mode, mode.transform, differs);
  Arg src = b.UsePlain(node.inputs[0], node);
  Act dst = b.NewAct(out, PlainDesc(out));
  std::vector<std::pair<int, Arg>> args = {{0, src}, {1, Arg{dst.slot, dst.md, {}}}};
  SeparableResize plan = PlanSeparableResize(in, samples, AttrFloat(node, "extrapolation_value", 0.0f));
  if (const std::int64_t scratch = plan.ScratchElements(); scratch > 0) {
    Act tmp = b.NewAct({scratch}, PlainDesc({scratch}));
    args.push_back({2, Arg{tmp.slot, tmp.md, {}}});
  }
  b.EmitCustom("resize", node.name, std::move(args),
               [plan = std::move(plan)](const std::vector<void*>& data) {
                 ResizeSeparable(plan, static_cast<const float*>(data[0]), static_cast<float*>(data[1]),
                                 data.size() > 2 ? static_cast<float*>(data[2]) : nullptr);
               },
               dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
