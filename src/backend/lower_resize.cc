// Resize (opsets 10, 11, 13, 18) as resampling_forward, when oneDNN computes
// exactly what ONNX asks.
//
//   X [N, C, D1..Dk] (k = 1..3), scales [rank] (float) or sizes [rank] (int64),
//   both constant; N and C keep their size. Opset 18's `axes` lists the axes
//   scales/sizes are given for (the others keep their size).
//   out_i = sizes_i, or floor(in_i * scales_i); the scale ONNX maps coordinates
//   with is scales_i, or out_i / in_i when sizes are given.
//
// ONNX (Operators.md, Resize) maps output index y of an axis to the input
// coordinate x by coordinate_transformation_mode (opset 10: asymmetric):
//   half_pixel         x = (y + 0.5) / scale - 0.5
//   pytorch_half_pixel x = out > 1 ? (y + 0.5) / scale - 0.5 : 0
//   asymmetric         x = y / scale
//   align_corners      x = out > 1 ? y * (in - 1) / (out - 1) : 0
//   tf_half_pixel_for_nn  x = (y + 0.5) / scale
// then `nearest` picks round_prefer_floor / round_prefer_ceil / floor / ceil of
// x (opset 10: floor when upsampling, ceil when downsampling, as ONNX Runtime),
// clamped to [0, in - 1]; `linear` interpolates between floor(x) and floor(x) + 1
// with x clamped to [0, in - 1].
// oneDNN 2.6 resampling (dev_guide_resampling; cpu/resampling_utils.hpp) maps
// with half_pixel and scale = out / in, in float: x = (y + 0.5f) * in / out - 0.5f;
// nearest takes roundf(x) (ties away from zero), linear the same clamped
// neighbours. Rather than reason per mode, EmitResize computes both index maps
// (nearest: the index; linear: both neighbours and the weight, to 1e-5) for
// every output index of every resized axis and lowers the node only when they
// agree: half_pixel linear with scale = out / in, integer upsampling in
// nearest mode with any transformation whose rounding has no ties, and so on.
// Otherwise Error(kUnsupported) names the mode, the transformation and where
// the maps part. cubic, tf_crop_and_resize, antialias and
// keep_aspect_ratio_policy other than stretch are refused.
#include <algorithm>
#include <cmath>

#include "host_eval.h"
#include "lower.h"

namespace onnxfuse::backend {

namespace {

struct Linear {
  std::int64_t i0 = 0, i1 = 0;
  double w1 = 0;  // weight of i1; 0 when both neighbours are the same
};

Linear Canonical(std::int64_t i0, std::int64_t i1, double w1) {
  if (i0 == i1 || w1 == 0) return {i0, i0, 0};
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

struct OnnxMap {
  std::string transform, nearest_mode;
  int opset = 13;

  double Coordinate(std::int64_t y, std::int64_t in, std::int64_t out, double scale) const {
    const double yd = static_cast<double>(y);
    if (transform == "half_pixel") return (yd + 0.5) / scale - 0.5;
    if (transform == "pytorch_half_pixel") return out > 1 ? (yd + 0.5) / scale - 0.5 : 0.0;
    if (transform == "asymmetric") return yd / scale;
    if (transform == "align_corners") return out > 1 ? yd * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    return (yd + 0.5) / scale;  // tf_half_pixel_for_nn
  }

  std::int64_t Nearest(std::int64_t y, std::int64_t in, std::int64_t out, double scale) const {
    double x = Coordinate(y, in, out, scale), i;
    if (opset < 11) i = scale < 1 ? std::ceil(x) : std::floor(x);
    else if (nearest_mode == "floor") i = std::floor(x);
    else if (nearest_mode == "ceil") i = std::ceil(x);
    else if (x - std::floor(x) == 0.5) i = nearest_mode == "round_prefer_ceil" ? std::ceil(x) : std::floor(x);
    else i = std::round(x);
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(i), 0, in - 1);
  }

  Linear Lin(std::int64_t y, std::int64_t in, std::int64_t out, double scale) const {
    double x = std::clamp(Coordinate(y, in, out, scale), 0.0, static_cast<double>(in - 1));
    auto i0 = static_cast<std::int64_t>(std::floor(x));
    return Canonical(i0, std::min(i0 + 1, in - 1), x - static_cast<double>(i0));
  }
};

}  // namespace

void EmitResize(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const int opset = static_cast<int>(b.graph.opset());
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  const Dims in = b.ActOf(node.inputs[0], node).dims;
  const std::string mode = AttrString(node, "mode", "nearest");
  OnnxMap onnx{opset >= 11 ? AttrString(node, "coordinate_transformation_mode", "half_pixel") : "asymmetric",
               AttrString(node, "nearest_mode", "round_prefer_floor"), opset};
  if (mode != "nearest" && mode != "linear")
    Unsupported(b, node, "mode '" + mode + "': oneDNN resampling has nearest and linear only");
  const std::string& t = onnx.transform;
  if (t != "half_pixel" && t != "pytorch_half_pixel" && t != "asymmetric" && t != "align_corners" &&
      t != "tf_half_pixel_for_nn")
    Unsupported(b, node, "coordinate_transformation_mode '" + t + "' is not supported");
  const std::string& nm = onnx.nearest_mode;
  if (mode == "nearest" && nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    Unsupported(b, node, "nearest_mode '" + nm + "' is not supported");
  if (AttrInt(node, "antialias", 0) != 0) Unsupported(b, node, "antialias=1 is not supported");
  if (AttrString(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    Unsupported(b, node, "keep_aspect_ratio_policy '" + AttrString(node, "keep_aspect_ratio_policy", "") + "'");

  // scales / sizes, per axis of X.
  const std::size_t rank = in.size();
  auto input = [&](std::size_t i) { return node.num_explicit_inputs > i && node.inputs[i] != kNoValue ? node.inputs[i] : kNoValue; };
  ValueId scales_v = input(opset >= 11 ? 2 : 1), sizes_v = opset >= 11 ? input(3) : kNoValue;
  Dims axes;
  for (auto a : AttrInts(node, "axes")) axes.push_back(a < 0 ? a + static_cast<std::int64_t>(rank) : a);
  if (axes.empty())
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<std::int64_t>(d));
  for (auto a : axes)
    if (a < 0 || a >= static_cast<std::int64_t>(rank)) Unsupported(b, node, "axes out of range");
  std::vector<double> scale(rank, 1.0);
  Dims out = in;
  std::vector<std::int64_t> sizes;
  if (sizes_v != kNoValue) sizes = AsInts(b.Const(sizes_v, node));
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) Unsupported(b, node, "sizes must have one entry per resized axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      auto a = static_cast<std::size_t>(axes[k]);
      out[a] = sizes[k];
      scale[a] = static_cast<double>(sizes[k]) / static_cast<double>(in[a]);
    }
  } else {
    if (scales_v == kNoValue) Unsupported(b, node, "neither scales nor sizes is given");
    const Tensor& s = b.Const(scales_v, node);
    if (static_cast<std::size_t>(s.NumElements()) != axes.size()) Unsupported(b, node, "scales must have one entry per resized axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      auto a = static_cast<std::size_t>(axes[k]);
      auto f = static_cast<float>(ElementAt(s, static_cast<std::int64_t>(k)));
      if (!(f > 0)) Unsupported(b, node, "scales must be positive");
      scale[a] = f;
      out[a] = static_cast<std::int64_t>(std::floor(static_cast<float>(in[a]) * f));
    }
  }
  if (rank < 3 || rank > 5) Unsupported(b, node, "oneDNN resampling takes 1-D to 3-D spatial data (X of rank 3 to 5)");
  if (out[0] != in[0] || out[1] != in[1]) Unsupported(b, node, "resizing the batch or channel axis is not supported");
  for (std::size_t d = 2; d < rank; ++d)
    if (out[d] < 1) Unsupported(b, node, "empty output along axis " + std::to_string(d));

  // The two index maps, output index by output index.
  const std::string what = "mode '" + mode + "' with coordinate_transformation_mode '" + t + "'" +
                           (mode == "nearest" ? " and nearest_mode '" + nm + "'" : std::string());
  for (std::size_t d = 2; d < rank; ++d) {
    for (std::int64_t y = 0; y < out[d]; ++y) {
      bool same;
      std::string detail;
      if (mode == "nearest") {
        std::int64_t o = onnx.Nearest(y, in[d], out[d], scale[d]), n = OneDnnNearest(y, in[d], out[d]);
        same = o == n;
        detail = "input " + std::to_string(o) + " where oneDNN reads " + std::to_string(n);
      } else {
        Linear o = onnx.Lin(y, in[d], out[d], scale[d]), n = OneDnnLinear(y, in[d], out[d]);
        same = o.i0 == n.i0 && o.i1 == n.i1 && std::fabs(o.w1 - n.w1) <= 1e-5;
        detail = "inputs " + std::to_string(o.i0) + ".." + std::to_string(o.i1) + " weight " + std::to_string(o.w1) +
                 " where oneDNN interpolates " + std::to_string(n.i0) + ".." + std::to_string(n.i1) + " weight " +
                 std::to_string(n.w1);
      }
      if (!same)
        Unsupported(b, node, what + " differs from oneDNN resampling (half_pixel, scale = output/input" +
                                 std::string(mode == "nearest" ? ", ties rounded up" : "") + "): axis " +
                                 std::to_string(d) + ", output index " + std::to_string(y) + " maps to " + detail);
    }
  }

  const auto alg = mode == "nearest" ? dnnl::algorithm::resampling_nearest : dnnl::algorithm::resampling_linear;
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
}

}  // namespace onnxfuse::backend
