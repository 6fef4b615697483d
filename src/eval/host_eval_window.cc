// MaxPool (with Indices), MaxUnpool, RoiAlign and LRN on host tensors
// (host_eval_window.h).
#include "eval/host_eval_window.h"
#include "eval/host_eval_ops.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "eval/dims.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// The input of rank >= 3 ([N, C, spatial...]) windowed ops take.
const Tensor& SpatialInput(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& x = NeedInput(node, in, 0);
  if (x.dims.size() < 3) InvalidNode(node, "X of shape " + DimsString(x.dims) + " has no spatial dims");
  return x;
}

// An ints attribute of one value per spatial dim, `fallback` when absent.
Dims SpatialAttr(const Node& node, const std::string& name, std::size_t count, std::int64_t fallback) {
  Dims v = AttrInts(node, name, Dims(count, fallback));
  if (v.size() != count)
    InvalidNode(node, name + " has " + std::to_string(v.size()) + " values for " + std::to_string(count) + " spatial dims");
  return v;
}

}  // namespace

// ---- MaxPool ----------------------------------------------------------------

// ONNX Operators.md, MaxPool-12 (and Conv-11, whose windows are the same
// without ceil_mode): output spatial dims and begin pads.
//   explicit pads: floor or (ceil_mode) ceil of (in + pads - ((k - 1) * d + 1)) / s, + 1
//   VALID:         ceil((in - ((k - 1) * d + 1) + 1) / s), no pads
//   SAME_UPPER/SAME_LOWER: ceil(in / s); pads total (out - 1) * s + (k - 1) * d + 1 - in,
//                  the odd one at the end (UPPER) or the beginning (LOWER)
// With ceil_mode, a last window that would start in the end padding is
// dropped (as PyTorch, oneDNN and the oneDNN lowering, backend/lower/ops/pool.cc).
WindowGeometry WindowGeometryOf(const Node& node, const Dims& x, const Dims& kernel) {
  const std::size_t spatial = x.size() - 2;
  WindowGeometry g;
  g.kernel = kernel;
  if (g.kernel.size() != spatial) InvalidNode(node, "kernel_shape does not match the input rank");
  g.strides = SpatialAttr(node, "strides", spatial, 1);
  g.dilations = SpatialAttr(node, "dilations", spatial, 1);
  const Dims pads = AttrInts(node, "pads", Dims(2 * spatial, 0));
  if (pads.size() != 2 * spatial) InvalidNode(node, "pads does not match the input rank");
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  const bool ceil_mode = AttrInt(node, "ceil_mode", 0) != 0;
  for (std::size_t i = 0; i < spatial; ++i) {
    const std::int64_t in = x[i + 2], s = g.strides[i], extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (g.kernel[i] < 1 || s < 1 || g.dilations[i] < 1) InvalidNode(node, "kernel_shape, strides and dilations must be positive");
    std::int64_t o = 0, begin = pads[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (in + s - 1) / s;
      const std::int64_t total = std::max<std::int64_t>(0, (o - 1) * s + extent - in);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      o = std::max<std::int64_t>(0, (in - extent + s) / s), begin = 0;
    } else if (auto_pad == "NOTSET") {
      const std::int64_t span = in + pads[i] + pads[i + spatial] - extent;
      if (span < 0) InvalidNode(node, "the kernel is larger than the padded input");
      o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= in + pads[i]) --o;
    } else {
      InvalidNode(node, "unknown auto_pad '" + auto_pad + "'");
    }
    g.out.push_back(o), g.pads_begin.push_back(begin);
  }
  return g;
}

namespace {

// Y and Indices. Each window is scanned in row-major order and the first
// strictly greater value kept (NaN never is), as ONNX Runtime.
std::vector<Tensor> MaxPool(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& x = SpatialInput(node, in);
  const WindowGeometry g = WindowGeometryOf(node, x.dims, AttrInts(node, "kernel_shape"));
  const std::size_t spatial = g.out.size();
  const bool column_major = AttrInt(node, "storage_order", 0) != 0;
  Dims out = {x.dims[0], x.dims[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  const Dims in_spatial(x.dims.begin() + 2, x.dims.end());
  const std::int64_t planes = x.dims[0] * x.dims[1], plane = Product(in_spatial), outputs = Product(g.out);
  const Dims row_strides = DenseStrides(in_spatial), out_strides = DenseStrides(g.out), kernel_strides = DenseStrides(g.kernel);
  Dims col_strides(spatial, 1);  // storage_order 1: the first spatial dim varies fastest
  for (std::size_t d = 1; d < spatial; ++d) col_strides[d] = col_strides[d - 1] * in_spatial[d - 1];
  std::vector<double> values, indices;
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t o = 0; o < outputs; ++o) {
      bool any = false, found = false;  // an element in the window; a maximum that is not NaN
      double best = std::nan("");
      std::int64_t best_index = 0;
      for (std::int64_t k = 0; k < Product(g.kernel); ++k) {
        std::int64_t row = 0, col = 0;
        bool inside = true;
        for (std::size_t d = 0; d < spatial && inside; ++d) {
          const std::int64_t c = (o / out_strides[d] % g.out[d]) * g.strides[d] - g.pads_begin[d] +
                                 (k / kernel_strides[d] % g.kernel[d]) * g.dilations[d];
          inside = c >= 0 && c < in_spatial[d];
          row += c * row_strides[d], col += c * col_strides[d];
        }
        if (!inside) continue;
        const double v = ElementAt(x, p * plane + row);
        if (!any || (!std::isnan(v) && (!found || v > best))) best = v, best_index = column_major ? col : row;
        any = true, found |= !std::isnan(v);
      }
      if (!any) InvalidNode(node, "a window lies in the padding alone (pads as large as the kernel)");
      values.push_back(best);
      indices.push_back(static_cast<double>(p * plane + best_index));
    }
  return {MakeHostTensor(IsInt64(x), out, values), MakeHostTensor(true, out, indices)};
}

// ---- MaxUnpool --------------------------------------------------------------

// The indices address the shape MaxUnpool-11 infers from the attributes,
// [N, C, (Di - 1) * strides_i + kernel_i - pads_begin_i - pads_end_i]; an
// output_shape input then only extends that result with zeros after its end
// along each axis (the ONNX reference implementation's reading, which the
// node test test_maxunpool_export_with_output_shape holds: indices of a 4 x 4
// result placed in a 5 x 5 output).
Tensor MaxUnpool(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor &x = SpatialInput(node, in), &indices = NeedInput(node, in, 1);
  if (indices.dims != x.dims)
    InvalidNode(node, "I of shape " + DimsString(indices.dims) + " differs from X's " + DimsString(x.dims));
  const std::size_t spatial = x.dims.size() - 2;
  const Dims kernel = AttrInts(node, "kernel_shape");
  if (kernel.size() != spatial) InvalidNode(node, "kernel_shape does not match the input rank");
  const Dims strides = SpatialAttr(node, "strides", spatial, 1);
  const Dims pads = AttrInts(node, "pads", Dims(2 * spatial, 0));
  if (pads.size() != 2 * spatial) InvalidNode(node, "pads does not match the input rank");
  Dims inferred = {x.dims[0], x.dims[1]};
  for (std::size_t i = 0; i < spatial; ++i)
    inferred.push_back((x.dims[i + 2] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + spatial]);
  for (auto d : inferred)
    if (d < 0) InvalidNode(node, "the inferred output shape " + DimsString(inferred) + " has a negative dim");
  Dims out = inferred;
  if (in.size() > 2 && in[2] && in[2]->NumElements() > 0) {
    out = AsInts(*in[2]);
    bool fits = out.size() == inferred.size();
    for (std::size_t d = 0; fits && d < out.size(); ++d) fits = out[d] >= inferred[d];
    if (!fits)
      InvalidNode(node, "output_shape " + DimsString(out) + " does not hold the inferred shape " + DimsString(inferred));
  }
  std::vector<double> values(static_cast<std::size_t>(Product(out)), 0.0);
  const Dims inferred_strides = DenseStrides(inferred), out_strides = DenseStrides(out);
  const auto positions = AsInts(indices);
  for (std::size_t j = 0; j < positions.size(); ++j) {
    const std::int64_t p = positions[j];
    if (p < 0 || p >= Product(inferred))
      InvalidNode(node, "index " + std::to_string(p) + " is outside the unpooled shape " + DimsString(inferred));
    std::int64_t at = 0;
    for (std::size_t d = 0; d < out.size(); ++d) at += p / inferred_strides[d] % inferred[d] * out_strides[d];
    values[static_cast<std::size_t>(at)] = ElementAt(x, static_cast<std::int64_t>(j));
  }
  return MakeHostTensor(IsInt64(x), out, values);
}

// ---- RoiAlign ---------------------------------------------------------------

// One bilinear sample of a plane (h x w) at (y, x), as RoiAlign's reference
// (Caffe2's, which ONNX Runtime and the ONNX reference share) takes it: a
// point more than one pixel outside the image is 0 (`inside` false);
// otherwise coordinates below 0 read row/column 0 and the last row/column is
// not interpolated past. Its 4 corners' offsets in the plane and weights; the
// same for every channel, so a roi's samples are worked out once (as ONNX
// Runtime's pre_calc does) and each channel reads them.
struct Sample {
  bool inside = false;
  std::array<std::int64_t, 4> at{};
  std::array<double, 4> weight{};
};

Sample BilinearSample(std::int64_t h, std::int64_t w, double y, double xc) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(h) || xc < -1.0 || xc > static_cast<double>(w)) return s;
  y = std::max(y, 0.0), xc = std::max(xc, 0.0);
  auto y_low = static_cast<std::int64_t>(y), x_low = static_cast<std::int64_t>(xc);
  std::int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= h - 1) y_high = y_low = h - 1, y = static_cast<double>(y_low);
  if (x_low >= w - 1) x_high = x_low = w - 1, xc = static_cast<double>(x_low);
  const double ly = y - static_cast<double>(y_low), lx = xc - static_cast<double>(x_low), hy = 1 - ly, hx = 1 - lx;
  s.inside = true;
  s.at = {y_low * w + x_low, y_low * w + x_high, y_high * w + x_low, y_high * w + x_high};
  s.weight = {hy * hx, hy * lx, ly * hx, ly * lx};
  return s;
}

// ONNX Operators.md, RoiAlign-16 (RoiAlign-10: output_half_pixel, the only
// behaviour then). Each roi, scaled by spatial_scale (and shifted by -0.5
// with half_pixel; output_half_pixel keeps rois at least 1 x 1), is cut into
// output_height x output_width bins, each sampled on a grid of sampling_ratio
// (0: ceil(bin size)) points per axis at the centres of its cells; avg takes
// their mean, max the largest weighted corner value of any sample.
Tensor RoiAlign(const Node& node, const std::vector<const Tensor*>& in, std::int64_t opset) {
  const Tensor &x = SpatialInput(node, in), &rois = NeedInput(node, in, 1), &batch = NeedInput(node, in, 2);
  if (x.dims.size() != 4 || IsInt64(x)) InvalidNode(node, "X must be a 4-D [N, C, H, W] float tensor");
  const std::int64_t num = rois.dims.empty() ? 0 : rois.dims[0];
  if (rois.dims.size() != 2 || rois.dims[1] != 4 || batch.NumElements() != num)
    InvalidNode(node, "rois of shape " + DimsString(rois.dims) + " and batch_indices of shape " + DimsString(batch.dims) +
                      " (expected [R, 4] and [R])");
  const std::string mode = AttrString(node, "mode", "avg");
  const std::string transform =
      opset >= 16 ? AttrString(node, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (mode != "avg" && mode != "max") InvalidNode(node, "unknown mode '" + mode + "'");
  const bool average = mode == "avg";
  if (transform != "half_pixel" && transform != "output_half_pixel")
    InvalidNode(node, "unknown coordinate_transformation_mode '" + transform + "'");
  const std::int64_t oh = AttrInt(node, "output_height", 1), ow = AttrInt(node, "output_width", 1);
  const std::int64_t ratio = AttrInt(node, "sampling_ratio", 0);
  const bool half_pixel = transform == "half_pixel";
  const double scale = AttrFloat(node, "spatial_scale", 1.f), offset = half_pixel ? 0.5 : 0.0;
  if (oh < 1 || ow < 1 || ratio < 0) InvalidNode(node, "output_height, output_width must be positive, sampling_ratio >= 0");
  const std::int64_t channels = x.dims[1], h = x.dims[2], w = x.dims[3];
  const std::vector<std::int64_t> images = AsInts(batch);
  for (const std::int64_t b : images)
    if (b < 0 || b >= x.dims[0]) InvalidNode(node, "batch index " + std::to_string(b) + " outside X");
  Tensor y;
  y.elem_type = x.elem_type, y.data_type = x.data_type, y.dims = {num, channels, oh, ow};
  y.data.resize(static_cast<std::size_t>(Product(y.dims)));
  const auto bins = static_cast<std::size_t>(oh * ow);
  // Rois are independent: threads split them (the session's thread count,
  // set with omp_set_num_threads), each with its own samples.
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t r = 0; r < num; ++r) {
    const std::int64_t b = images[static_cast<std::size_t>(r)];
    const double x1 = ElementAt(rois, r * 4) * scale - offset, y1 = ElementAt(rois, r * 4 + 1) * scale - offset;
    double roi_w = ElementAt(rois, r * 4 + 2) * scale - offset - x1, roi_h = ElementAt(rois, r * 4 + 3) * scale - offset - y1;
    if (!half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / static_cast<double>(oh), bin_w = roi_w / static_cast<double>(ow);
    const auto grid_h = ratio > 0 ? ratio : static_cast<std::int64_t>(std::ceil(bin_h));
    const auto grid_w = ratio > 0 ? ratio : static_cast<std::int64_t>(std::ceil(bin_w));
    const double count = static_cast<double>(std::max<std::int64_t>(grid_h * grid_w, 1));
    // The roi's samples, bin by bin (ph, pw), each bin's grid in order (iy, ix).
    std::vector<Sample> samples;
    samples.reserve(bins * static_cast<std::size_t>(std::max<std::int64_t>(grid_h * grid_w, 0)));
    for (std::int64_t ph = 0; ph < oh; ++ph)
      for (std::int64_t pw = 0; pw < ow; ++pw)
        for (std::int64_t iy = 0; iy < grid_h; ++iy)
          for (std::int64_t ix = 0; ix < grid_w; ++ix) {
            const double yc = y1 + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            const double xc = x1 + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            samples.push_back(BilinearSample(h, w, yc, xc));
          }
    const auto per_bin = static_cast<std::size_t>(grid_h * grid_w);
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* plane = x.data.data() + (b * channels + c) * h * w;
      float* out = y.data.data() + static_cast<std::size_t>(r * channels + c) * bins;
      for (std::size_t bin = 0; bin < bins; ++bin) {
        double sum = 0, best = 0;
        for (std::size_t k = 0; k < per_bin; ++k) {
          const Sample& s = samples[bin * per_bin + k];
          std::array<double, 4> corners{0, 0, 0, 0};
          if (s.inside)
            for (std::size_t q = 0; q < 4; ++q) corners[q] = s.weight[q] * plane[s.at[q]];
          if (average) {
            sum += corners[0] + corners[1] + corners[2] + corners[3];
          } else {
            const double largest = *std::max_element(corners.begin(), corners.end());
            best = k == 0 ? largest : std::max(best, largest);
          }
        }
        out[bin] = static_cast<float>(average ? sum / count : best);
      }
    }
  }
  return y;
}

// ---- LRN --------------------------------------------------------------------

// ONNX Operators.md, LRN-13: y = x / (bias + alpha / size * square_sum)^beta,
// square_sum over channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2)
// (clipped to [0, C)).
Tensor Lrn(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& x = SpatialInput(node, in);
  const std::int64_t size = AttrInt(node, "size", 0);
  if (size < 1) InvalidNode(node, "size must be positive");
  const double alpha = AttrFloat(node, "alpha", 1e-4f), beta = AttrFloat(node, "beta", 0.75f),
               bias = AttrFloat(node, "bias", 1.f);
  const std::int64_t channels = x.dims[1], inner = Product(Dims(x.dims.begin() + 2, x.dims.end()));
  const std::int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<double> values(static_cast<std::size_t>(x.NumElements()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto flat = static_cast<std::int64_t>(i);
    const std::int64_t c = flat / inner % channels, base = flat - c * inner;
    double square_sum = 0;
    for (std::int64_t k = std::max<std::int64_t>(0, c - before); k <= std::min(channels - 1, c + after); ++k) {
      const double v = ElementAt(x, base + k * inner);
      square_sum += v * v;
    }
    values[i] = ElementAt(x, flat) / std::pow(bias + alpha / static_cast<double>(size) * square_sum, beta);
  }
  return MakeHostTensor(false, x.dims, values);
}

}  // namespace

bool IsHostWindowOp(const std::string& op_type) {
  return op_type == "MaxPool" || op_type == "MaxUnpool" || op_type == "RoiAlign" || op_type == "LRN";
}

std::optional<std::vector<Tensor>> EvalWindowOp(const Node& node, const std::vector<const Tensor*>& inputs,
                                                std::int64_t opset) {
  if (node.op_type == "MaxPool") return MaxPool(node, inputs);
  if (node.op_type == "MaxUnpool") return One(MaxUnpool(node, inputs));
  if (node.op_type == "RoiAlign") return One(RoiAlign(node, inputs, opset));
  if (node.op_type == "LRN") return One(Lrn(node, inputs));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
