// Resize, Upsample and GridSample on host tensors (host_eval_sample.h).
#include "eval/host_eval_sample.h"
#include "eval/host_eval_ops.h"

#include <algorithm>
#include <cmath>

#include "eval/dims.h"
#include "eval/host_eval_window.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

[[noreturn]] void Refuse(const Node& node, const std::string& why) {
  throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": " + why);
}

// An optional input with at least one element (Resize-11/13 pass an empty
// tensor for "not given"), or nullptr.
const Tensor* Given(const std::vector<const Tensor*>& in, std::size_t i) {
  return i < in.size() && in[i] && in[i]->NumElements() > 0 ? in[i] : nullptr;
}

// Keys' cubic convolution kernel W(d) for |d| < 2 (ONNX Operators.md,
// Resize: cubic_coeff_a; GridSample: A = -0.75).
double CubicWeight(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// ---- Resize -----------------------------------------------------------------

struct ResizeAttrs {
  std::string mode, transform, nearest_mode;
  double cubic_coeff_a = -0.75, extrapolation_value = 0;
  bool exclude_outside = false;
  bool simple_nearest = false;  // Resize-10 and Upsample: no nearest_mode (see NearestIndex)
};

// One input sample of an output coordinate along one axis.
struct Tap {
  std::int64_t index;
  double weight;
};

// Along one axis: the taps of each output index; an empty list marks a
// coordinate tf_crop_and_resize puts outside the input (extrapolation_value).
using AxisTaps = std::vector<std::vector<Tap>>;

// ONNX Operators.md, Resize-13, coordinate_transformation_mode: the input
// coordinate of output index y. `length_resized` is in * scale unrounded when
// scales are given (the node tests' expected outputs are computed so: 4 * 0.6
// = 2.4 for align_corners), the output length when sizes are.
double SourceCoordinate(const ResizeAttrs& a, double y, std::int64_t in, double scale, double length_resized,
                        double roi_start, double roi_end) {
  const double n = static_cast<double>(in);
  const std::string& t = a.transform;
  if (t == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (t == "pytorch_half_pixel") return length_resized > 1 ? (y + 0.5) / scale - 0.5 : 0;
  if (t == "align_corners") return length_resized > 1 ? y * (n - 1) / (length_resized - 1) : 0;
  if (t == "asymmetric") return y / scale;
  if (t == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  // tf_crop_and_resize
  return length_resized > 1 ? roi_start * (n - 1) + y * (roi_end - roi_start) * (n - 1) / (length_resized - 1)
                            : 0.5 * (roi_start + roi_end) * (n - 1);
}

// The nearest input index of coordinate x. nearest_mode per Resize-11/13;
// Resize-10 and Upsample say nothing of rounding: as ONNX Runtime, floor when
// upsampling and ceil when downsampling (the opset-10 node tests' outputs).
std::int64_t NearestIndex(const ResizeAttrs& a, double x, double scale) {
  const double lo = std::floor(x), r = x - lo;
  if (a.simple_nearest) return static_cast<std::int64_t>(scale < 1 ? std::ceil(x) : lo);
  bool up = false;
  if (r == 0) up = false;
  else if (a.nearest_mode == "round_prefer_floor") up = r > 0.5;
  else if (a.nearest_mode == "round_prefer_ceil") up = r >= 0.5;
  else if (a.nearest_mode == "ceil") up = true;
  return static_cast<std::int64_t>(lo) + (up ? 1 : 0);
}

// The taps of output index y along an axis of `in` inputs: nearest one,
// linear floor(x) and floor(x) + 1 with weights 1 - r and r, cubic floor(x) - 1
// .. floor(x) + 2 with Keys' weights of their distance to x. exclude_outside
// zeroes the weights of indices outside [0, in) and renormalizes them to sum
// 1; the rest are clamped to the edge (the reference's edge padding).
std::vector<Tap> AxisSamples(const ResizeAttrs& a, double x, std::int64_t in, double scale) {
  std::vector<Tap> taps;
  if (a.mode == "nearest") {
    taps.push_back({NearestIndex(a, x, scale), 1.0});
  } else {
    const double lo = std::floor(x), r = x - lo;
    const auto base = static_cast<std::int64_t>(lo);
    if (a.mode == "linear") {
      taps = {{base, 1 - r}, {base + 1, r}};
    } else {
      for (std::int64_t k = -1; k <= 2; ++k) taps.push_back({base + k, CubicWeight(r - static_cast<double>(k), a.cubic_coeff_a)});
    }
    if (a.exclude_outside) {
      double sum = 0;
      for (Tap& t : taps) {
        if (t.index < 0 || t.index >= in) t.weight = 0;
        sum += t.weight;
      }
      for (Tap& t : taps) t.weight = sum != 0 ? t.weight / sum : 0;
    }
  }
  std::vector<Tap> kept;
  for (Tap t : taps)
    if (t.weight != 0) kept.push_back({std::clamp<std::int64_t>(t.index, 0, in - 1), t.weight});
  return kept;
}

ResizeAttrs ResizeAttrsOf(const Node& node, std::int64_t opset) {
  ResizeAttrs a;
  const bool upsample = node.op_type == "Upsample";
  a.mode = AttrString(node, "mode", "nearest");
  if (upsample && a.mode == "bilinear") a.mode = "linear";  // Upsample-7 accepts both names
  a.simple_nearest = upsample || opset < 11;
  a.transform = a.simple_nearest ? "asymmetric" : AttrString(node, "coordinate_transformation_mode", "half_pixel");
  a.nearest_mode = AttrString(node, "nearest_mode", "round_prefer_floor");
  a.cubic_coeff_a = AttrFloat(node, "cubic_coeff_a", -0.75f);
  a.exclude_outside = AttrInt(node, "exclude_outside", 0) != 0;
  a.extrapolation_value = AttrFloat(node, "extrapolation_value", 0.f);
  if (a.mode != "nearest" && a.mode != "linear" && (a.mode != "cubic" || a.simple_nearest))
    InvalidNode(node, "unknown mode '" + a.mode + "'");
  const std::string& t = a.transform;
  if (t != "half_pixel" && t != "pytorch_half_pixel" && t != "align_corners" && t != "asymmetric" &&
      t != "tf_half_pixel_for_nn" && t != "tf_crop_and_resize")
    InvalidNode(node, "unknown coordinate_transformation_mode '" + t + "'");
  const std::string& nm = a.nearest_mode;
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    InvalidNode(node, "unknown nearest_mode '" + nm + "'");
  // Resize-18's additions; the loader's down-conversion refuses them before here.
  if (AttrInt(node, "antialias", 0) != 0 || FindAttr(node, "axes") ||
      AttrString(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    Refuse(node, "antialias, axes and keep_aspect_ratio_policy (Resize-18) are not supported");
  return a;
}

// Resize-10/11/13 and Upsample-7/9: every axis resampled independently (the
// result is the nested 1-D interpolations of the reference, so weights are
// products of per-axis weights); an output any of whose axes tf_crop_and_resize
// maps outside the input is extrapolation_value.
Tensor Resize(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const ResizeAttrs a = ResizeAttrsOf(node, opset);
  const std::size_t rank = x.dims.size();
  const bool upsample = node.op_type == "Upsample";
  std::vector<double> scales;
  const Tensor* sizes = nullptr;
  const Tensor* roi = nullptr;
  if (upsample && opset < 9) {
    const auto* attr = FindAttr(node, "scales");
    if (!attr) InvalidNode(node, "no scales attribute");
    scales.assign(attr->floats().begin(), attr->floats().end());
  } else {
    const Tensor* s = Given(in, upsample || opset < 11 ? 1 : 2);
    if (!upsample && opset >= 11) sizes = Given(in, 3), roi = Given(in, 1);
    if (s && sizes) InvalidNode(node, "scales and sizes are both given");
    if (!s && !sizes) InvalidNode(node, "neither scales nor sizes is given");
    if (s) scales = HostValues(*s);
  }
  if (sizes && static_cast<std::size_t>(sizes->NumElements()) != rank)
    InvalidNode(node, "sizes has " + std::to_string(sizes->NumElements()) + " values for an input of rank " +
                      std::to_string(rank));
  if (!sizes && scales.size() != rank)
    InvalidNode(node, "scales has " + std::to_string(scales.size()) + " values for an input of rank " + std::to_string(rank));
  if (a.transform == "tf_crop_and_resize" && (!roi || static_cast<std::size_t>(roi->NumElements()) != 2 * rank))
    InvalidNode(node, "tf_crop_and_resize needs roi with 2 values per axis");
  const std::vector<std::int64_t> sized = sizes ? AsInts(*sizes) : std::vector<std::int64_t>{};
  Dims out(rank);
  std::vector<AxisTaps> axes(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    double scale = 0, length_resized = 0;
    if (sizes) {
      out[d] = sized[d];
      scale = static_cast<double>(out[d]) / static_cast<double>(x.dims[d]);
      length_resized = static_cast<double>(out[d]);
    } else {
      // In float, as ONNX shape inference computes the output dims.
      const auto scale_f = static_cast<float>(scales[d]);
      if (!(scale_f > 0)) InvalidNode(node, "scales must be positive");
      out[d] = static_cast<std::int64_t>(std::floor(static_cast<float>(x.dims[d]) * scale_f));
      scale = scale_f, length_resized = static_cast<double>(x.dims[d]) * scale;
    }
    if (out[d] < 0 || (out[d] > 0 && x.dims[d] == 0)) InvalidNode(node, "output dim " + std::to_string(d) + " is invalid");
    const double roi_start = roi ? ElementAt(*roi, static_cast<std::int64_t>(d)) : 0;
    const double roi_end = roi ? ElementAt(*roi, static_cast<std::int64_t>(d + rank)) : 1;
    for (std::int64_t y = 0; y < out[d]; ++y) {
      const double c = SourceCoordinate(a, static_cast<double>(y), x.dims[d], scale, length_resized, roi_start, roi_end);
      const bool outside = a.transform == "tf_crop_and_resize" && (c < 0 || c > static_cast<double>(x.dims[d] - 1));
      axes[d].push_back(outside ? std::vector<Tap>{} : AxisSamples(a, c, x.dims[d], scale));
    }
  }
  const Dims in_strides = DenseStrides(x.dims), out_strides = DenseStrides(out);
  std::vector<double> values(static_cast<std::size_t>(Product(out)));
  std::vector<const std::vector<Tap>*> taps(rank);
  std::vector<std::size_t> k(rank);
  for (std::size_t i = 0; i < values.size(); ++i) {
    bool outside = false;
    for (std::size_t d = 0; d < rank; ++d) {
      taps[d] = &axes[d][static_cast<std::size_t>(static_cast<std::int64_t>(i) / out_strides[d] % out[d])];
      outside |= taps[d]->empty();
    }
    if (outside) {
      values[i] = a.extrapolation_value;
      continue;
    }
    // Every combination of one tap per axis (an odometer over k).
    std::fill(k.begin(), k.end(), 0);
    double sum = 0;
    for (bool more = true; more;) {
      double w = 1;
      std::int64_t src = 0;
      for (std::size_t d = 0; d < rank; ++d) w *= (*taps[d])[k[d]].weight, src += (*taps[d])[k[d]].index * in_strides[d];
      sum += w * ElementAt(x, src);
      more = false;
      for (std::size_t d = rank; d-- > 0 && !more;) {
        if (++k[d] < taps[d]->size()) more = true;
        else k[d] = 0;
      }
    }
    values[i] = sum;
  }
  return MakeHostTensor(IsInt64(x), out, values);
}

// ---- GridSample -------------------------------------------------------------

// ONNX Operators.md, GridSample-16: a normalized grid coordinate g in [-1, 1]
// as a pixel coordinate of an axis of n pixels. align_corners: -1 and 1 are
// the centres of the corner pixels; otherwise their outer edges.
double Unnormalize(double g, std::int64_t n, bool align_corners) {
  const double size = static_cast<double>(n);
  return align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
}

// Reflects x into [low, high] by the borders, repeatedly ("x = -3.5 reflects
// by border -1 to 1.5, then by border 1 to 0.5").
double Reflect(double x, double low, double high) {
  const double span = high - low;
  if (span <= 0) return low;
  double d = std::abs(x - low);
  const double flips = std::floor(d / span);
  d -= flips * span;
  return std::fmod(flips, 2) == 0 ? low + d : high - d;
}

// padding_mode applied to a pixel coordinate: border clamps to [0, n - 1];
// reflection reflects by the borders (the corner pixels' centres with
// align_corners, their outer edges otherwise), then clamps; zeros leaves it,
// and a pixel outside reads 0 (GridPixel).
double PadCoordinate(double x, std::int64_t n, const std::string& padding, bool align_corners) {
  const double last = static_cast<double>(n - 1);
  if (padding == "border") return std::clamp(x, 0.0, last);
  if (padding == "reflection") {
    x = align_corners ? Reflect(x, 0, last) : Reflect(x, -0.5, last + 0.5);
    return std::clamp(x, 0.0, last);
  }
  return x;
}

struct GridImage {
  const Tensor* x;
  std::int64_t offset, h, w;  // of the (n, c) plane
};

// The pixel at integer (row, col): 0 outside the image (zeros padding; the
// other modes have padded the coordinate into the image).
double GridPixel(const GridImage& im, std::int64_t row, std::int64_t col) {
  if (row < 0 || row >= im.h || col < 0 || col >= im.w) return 0;
  return ElementAt(*im.x, im.offset + row * im.w + col);
}

// One output value at unnormalized (x, y). bilinear and nearest pad the
// sample point; bicubic pads each of its 4 x 4 taps (the pixels at
// floor(x) - 1 .. floor(x) + 2, Keys' weights with A = -0.75), as PyTorch's
// grid_sample, whose outputs the node tests hold.
double GridValue(const GridImage& im, double x, double y, const std::string& mode, const std::string& padding,
                 bool align_corners) {
  if (mode == "bicubic") {
    const double x0 = std::floor(x), y0 = std::floor(y);
    double sum = 0;
    for (int j = -1; j <= 2; ++j)
      for (int i = -1; i <= 2; ++i) {
        const double px = PadCoordinate(x0 + i, im.w, padding, align_corners);
        const double py = PadCoordinate(y0 + j, im.h, padding, align_corners);
        const double v = GridPixel(im, static_cast<std::int64_t>(py), static_cast<std::int64_t>(px));
        sum += CubicWeight(x - (x0 + i), -0.75) * CubicWeight(y - (y0 + j), -0.75) * v;
      }
    return sum;
  }
  x = PadCoordinate(x, im.w, padding, align_corners), y = PadCoordinate(y, im.h, padding, align_corners);
  if (mode == "nearest")  // rounding half to even
    return GridPixel(im, static_cast<std::int64_t>(std::nearbyint(y)), static_cast<std::int64_t>(std::nearbyint(x)));
  const double x0 = std::floor(x), y0 = std::floor(y), rx = x - x0, ry = y - y0;
  const auto c = static_cast<std::int64_t>(x0), r = static_cast<std::int64_t>(y0);
  return (1 - ry) * ((1 - rx) * GridPixel(im, r, c) + rx * GridPixel(im, r, c + 1)) +
         ry * ((1 - rx) * GridPixel(im, r + 1, c) + rx * GridPixel(im, r + 1, c + 1));
}

Tensor GridSample(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor &x = NeedInput(node, in, 0), &grid = NeedInput(node, in, 1);
  const std::string mode = AttrString(node, "mode", "bilinear"), padding = AttrString(node, "padding_mode", "zeros");
  const bool align_corners = AttrInt(node, "align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") InvalidNode(node, "unknown mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    InvalidNode(node, "unknown padding_mode '" + padding + "'");
  if (x.dims.size() != 4) Refuse(node, "only 4-D X (2-D images) is supported");
  const std::int64_t n = x.dims[0], channels = x.dims[1], h = x.dims[2], w = x.dims[3];
  if (grid.dims.size() != 4 || grid.dims[0] != n || grid.dims[3] != 2)
    InvalidNode(node, "grid of shape " + DimsString(grid.dims) + " for X of shape " + DimsString(x.dims) +
                      " (expected [N, H_out, W_out, 2])");
  const std::int64_t ho = grid.dims[1], wo = grid.dims[2];
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(n * channels * ho * wo));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t c = 0; c < channels; ++c) {
      const GridImage im{&x, (b * channels + c) * h * w, h, w};
      for (std::int64_t p = 0; p < ho * wo; ++p) {
        const std::int64_t g = (b * ho * wo + p) * 2;
        const double gx = Unnormalize(ElementAt(grid, g), w, align_corners);
        const double gy = Unnormalize(ElementAt(grid, g + 1), h, align_corners);
        values.push_back(GridValue(im, gx, gy, mode, padding, align_corners));
      }
    }
  return MakeHostTensor(false, {n, channels, ho, wo}, values);
}

}  // namespace

bool IsHostSampleOp(const std::string& op_type) {
  return op_type == "Resize" || op_type == "Upsample" || op_type == "GridSample" || IsHostWindowOp(op_type);
}

std::optional<std::vector<Tensor>> EvalSampleOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset) {
  if (node.op_type == "Resize" || node.op_type == "Upsample") return One(Resize(node, inputs, opset));
  if (node.op_type == "GridSample") return One(GridSample(node, inputs));
  return EvalWindowOp(node, inputs, opset);
}

std::vector<std::size_t> SampleShapeInputs(const Node& node, std::int64_t opset) {
  if (node.op_type == "Resize") return opset >= 11 ? std::vector<std::size_t>{3, 2} : std::vector<std::size_t>{1};
  if (node.op_type == "Upsample") return opset >= 9 ? std::vector<std::size_t>{1} : std::vector<std::size_t>{};
  if (node.op_type == "MaxUnpool") return {2};
  return {};
}

}  // namespace onnxfuse::eval
