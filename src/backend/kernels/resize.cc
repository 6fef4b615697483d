#include "backend/kernels/resize.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "backend/kernels/cpu_isa.h"


namespace onnxfuse::backend {

namespace {

using Dims = std::vector<std::int64_t>;

std::int64_t Product(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

}  // namespace

bool AxisSamples::Identity() const {
  if (in != out) return false;
  for (std::int64_t y = 0; y < out; ++y) {
    if (outside[static_cast<std::size_t>(y)]) return false;
    float on_y = 0;  // the weight of sample y itself
    for (int t = 0; t < taps; ++t) {
      const auto k = static_cast<std::size_t>(y * taps + t);
      if (weight[k] == 0.0f) continue;
      if (index[k] != y) return false;
      on_y += weight[k];
    }
    if (on_y != 1.0f) return false;
  }
  return true;
}

double SourceCoordinate(const ResizeMode& mode, const AxisResize& axis, std::int64_t y) {
  const double yd = static_cast<double>(y), in = static_cast<double>(axis.in), len = axis.length_resized;
  const std::string& t = mode.opset < 11 ? std::string("asymmetric") : mode.transform;
  if (t == "half_pixel") return (yd + 0.5) / axis.scale - 0.5;
  if (t == "pytorch_half_pixel") return len > 1 ? (yd + 0.5) / axis.scale - 0.5 : 0.0;
  if (t == "asymmetric") return yd / axis.scale;
  if (t == "align_corners") return len > 1 ? yd * (in - 1) / (len - 1) : 0.0;
  if (t == "tf_crop_and_resize") {
    const double span = axis.roi_end - axis.roi_start;
    return len > 1 ? axis.roi_start * (in - 1) + yd * span * (in - 1) / (len - 1)
                   : (axis.roi_start + axis.roi_end) * (in - 1) / 2;
  }
  return (yd + 0.5) / axis.scale;  // tf_half_pixel_for_nn
}

namespace {

// Keys' cubic convolution weights for the samples at offsets -1, 0, 1, 2 from
// floor(x), r = x - floor(x) in (0, 1): the kernel
//   W(d) = (A + 2)|d|^3 - (A + 3)|d|^2 + 1          for |d| <= 1
//   W(d) = A|d|^3 - 5A|d|^2 + 8A|d| - 4A            for 1 < |d| < 2
// at distances 1 + r, r, 1 - r and 2 - r.
void CubicWeights(double r, double a, double w[4]) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  w[0] = far(1 + r), w[1] = near(r), w[2] = near(1 - r), w[3] = far(2 - r);
}

}  // namespace

AxisSamples SampleAxis(const ResizeMode& mode, const AxisResize& axis) {
  AxisSamples s;
  s.in = axis.in, s.out = axis.out;
  s.taps = mode.mode == "cubic" ? 4 : mode.mode == "linear" ? 2 : 1;
  const auto n = static_cast<std::size_t>(axis.out);
  s.index.assign(n * static_cast<std::size_t>(s.taps), 0);
  s.weight.assign(n * static_cast<std::size_t>(s.taps), 0.0f);
  s.outside.assign(n, 0);
  const bool crop = mode.opset >= 11 && mode.transform == "tf_crop_and_resize";
  for (std::int64_t y = 0; y < axis.out; ++y) {
    const double x = SourceCoordinate(mode, axis, y);
    const std::size_t at = static_cast<std::size_t>(y) * static_cast<std::size_t>(s.taps);
    if (crop && (x < 0 || x > static_cast<double>(axis.in - 1))) {  // TF's CropAndResize: extrapolation_value
      s.outside[static_cast<std::size_t>(y)] = 1;
      continue;
    }
    const double fl = std::floor(x), r = x - fl;
    const auto base = static_cast<std::int64_t>(fl);
    // Offsets from floor(x) and their weights.
    std::vector<std::int64_t> offset;
    std::vector<double> w;
    if (r == 0) {
      offset = {0}, w = {1};
    } else if (mode.mode == "nearest") {
      bool up;
      if (mode.opset < 11) up = axis.scale < 1;
      else if (mode.nearest_mode == "floor") up = false;
      else if (mode.nearest_mode == "ceil") up = true;
      else if (mode.nearest_mode == "round_prefer_ceil") up = r >= 0.5;
      else up = r > 0.5;  // round_prefer_floor
      offset = {up ? 1 : 0}, w = {1};
    } else if (mode.mode == "linear") {
      offset = {0, 1}, w = {1 - r, r};
    } else {
      double c[4];
      CubicWeights(r, mode.cubic_coeff_a, c);
      offset = {-1, 0, 1, 2}, w = {c[0], c[1], c[2], c[3]};
    }
    if (mode.exclude_outside) {
      double sum = 0;
      for (std::size_t t = 0; t < w.size(); ++t) {
        const std::int64_t i = base + offset[t];
        if (i < 0 || i >= axis.in) w[t] = 0;
        sum += w[t];
      }
      for (double& v : w) v = sum != 0 ? v / sum : 0;
    }
    for (std::size_t t = 0; t < w.size(); ++t) {
      s.index[at + t] = std::clamp<std::int64_t>(base + offset[t], 0, axis.in - 1);
      s.weight[at + t] = static_cast<float>(w[t]);
    }
  }
  return s;
}

namespace {

// One output row (`inner` contiguous floats) of output index y along the axis,
// from `plane` [axis.in, inner]: built once per instruction set, so GCC
// vectorizes the weighted sums for each (ForCpuIsa chooses).
[[gnu::always_inline]] inline void ResampleRow(const float* plane, float* out, std::int64_t y, std::int64_t inner,
                                               const AxisSamples& axis, float extrapolation_value) {
  if (axis.outside[static_cast<std::size_t>(y)]) {
    std::fill_n(out, inner, extrapolation_value);
    return;
  }
  const std::size_t at = static_cast<std::size_t>(y * axis.taps);
  const float* first = plane + axis.index[at] * inner;
  const float w0 = axis.weight[at];
  for (std::int64_t i = 0; i < inner; ++i) out[i] = w0 * first[i];
  for (int t = 1; t < axis.taps; ++t) {
    const float w = axis.weight[at + static_cast<std::size_t>(t)];
    if (w == 0.0f) continue;
    const float* in = plane + axis.index[at + static_cast<std::size_t>(t)] * inner;
    for (std::int64_t i = 0; i < inner; ++i) out[i] += w * in[i];
  }
}
using ResampleRowFn = void (*)(const float*, float*, std::int64_t, std::int64_t, const AxisSamples&, float);
__attribute__((target("avx512f"))) void ResampleRowAvx512(const float* plane, float* out, std::int64_t y,
                                                         std::int64_t inner, const AxisSamples& axis, float fill) {
  ResampleRow(plane, out, y, inner, axis, fill);
}
__attribute__((target("avx2"))) void ResampleRowAvx2(const float* plane, float* out, std::int64_t y, std::int64_t inner,
                                                     const AxisSamples& axis, float fill) {
  ResampleRow(plane, out, y, inner, axis, fill);
}
void ResampleRowBaseline(const float* plane, float* out, std::int64_t y, std::int64_t inner, const AxisSamples& axis,
                         float fill) {
  ResampleRow(plane, out, y, inner, axis, fill);
}

// dst [outer, axis.out, inner] from src [outer, axis.in, inner], one output row at a time.
void ResampleAxis(const float* src, float* dst, std::int64_t outer, std::int64_t inner, const AxisSamples& axis,
                  float extrapolation_value) {
  static const ResampleRowFn resample_row =
      ForCpuIsa<ResampleRowFn>(ResampleRowAvx512, ResampleRowAvx2, ResampleRowBaseline);
  const std::int64_t rows = outer * axis.out;
#pragma omp parallel for schedule(static) if (rows * inner > 4096)
  for (std::int64_t row = 0; row < rows; ++row)
    resample_row(src + row / axis.out * axis.in * inner, dst + row * inner, row % axis.out, inner, axis,
                 extrapolation_value);
}

}  // namespace

std::int64_t SeparableResize::ScratchElements() const {
  return passes.size() < 2 ? 0 : passes.size() == 2 ? scratch_half : 2 * scratch_half;
}

SeparableResize PlanSeparableResize(const std::vector<std::int64_t>& in_dims, const std::vector<AxisSamples>& axes,
                                    float extrapolation_value) {
  SeparableResize plan;
  plan.elements = Product(in_dims);
  plan.extrapolation_value = extrapolation_value;
  Dims dims = in_dims;
  for (std::size_t d = 0; d < axes.size(); ++d) {
    if (axes[d].Identity()) continue;
    if (!plan.passes.empty()) plan.scratch_half = std::max(plan.scratch_half, Product(dims));  // the previous pass's result
    SeparableResize::Pass pass;
    pass.samples = axes[d];
    pass.outer = Product(Dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(d)));
    pass.inner = Product(Dims(dims.begin() + static_cast<std::ptrdiff_t>(d) + 1, dims.end()));
    plan.passes.push_back(std::move(pass));
    dims[d] = axes[d].out;
  }
  return plan;
}

void ResizeSeparable(const SeparableResize& plan, const float* x, float* y, float* scratch) {
  if (plan.passes.empty()) {
    std::copy_n(x, plan.elements, y);
    return;
  }
  const float* src = x;
  for (std::size_t p = 0; p < plan.passes.size(); ++p) {
    const SeparableResize::Pass& pass = plan.passes[p];
    float* dst = p + 1 == plan.passes.size() ? y : scratch + static_cast<std::int64_t>(p % 2) * plan.scratch_half;
    ResampleAxis(src, dst, pass.outer, pass.inner, pass.samples, plan.extrapolation_value);
    src = dst;
  }
}

}  // namespace onnxfuse::backend
