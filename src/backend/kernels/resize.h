// ONNX Resize as our own loops, for what oneDNN 2.6's resampling does not
// compute: cubic interpolation, align_corners, tf_crop_and_resize, nearest
// rounding other than half_pixel's, non-integer scales whose pixel grid
// differs from oneDNN's, and resizing the batch or channel axis.
//
// Resize is separable: the n-D result is the 1-D resampling of each axis in
// turn (ONNX's reference implementation, onnx/backend/test/case/node/resize.py,
// nests the 1-D interpolations the same way), so one table per axis says which
// input samples, with which weights, make each output index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse::backend {

/// Resize's attributes (Operators.md, Resize, opsets 10 to 13).
struct ResizeMode {
  std::string mode = "nearest";                      ///< nearest | linear | cubic
  std::string transform = "half_pixel";              ///< coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";   ///< round_prefer_floor | round_prefer_ceil | floor | ceil
  double cubic_coeff_a = -0.75;                      ///< A of Keys' cubic convolution kernel
  bool exclude_outside = false;                      ///< weights of samples outside the input set to 0, renormalized
  int opset = 13;                                    ///< opset 10: asymmetric; nearest rounds by the scale
};

/// The samples of one axis. Output index y reads input indices
/// index[y * taps + t] (already clamped to [0, in - 1], which is the reference's
/// edge padding) with weight[y * taps + t], t < taps; outside[y] != 0 when
/// tf_crop_and_resize maps y outside the input: that output is
/// extrapolation_value.
struct AxisSamples {
  std::int64_t in = 0, out = 0;
  int taps = 1;  ///< 1 nearest, 2 linear, 4 cubic
  std::vector<std::int64_t> index;
  std::vector<float> weight;
  std::vector<char> outside;

  /// True when the axis keeps every value as it is (out == in, y reads y alone).
  bool Identity() const;
};

/// One axis to resize: `in` input and `out` output indices, the scale ONNX
/// maps coordinates with (scales[d], or out / in when sizes are given), and
/// length_resized: scale * in unrounded when scales are given, out when sizes
/// are (ONNX's reference implementation uses scale * in; it matters for
/// align_corners: 4 * 0.6 = 2.4, where ONNX Runtime 1.30 takes the output
/// size, 2, and so fails that node test). roi_start, roi_end (normalized)
/// serve tf_crop_and_resize only.
struct AxisResize {
  std::int64_t in = 1, out = 1;
  double scale = 1, length_resized = 1;
  double roi_start = 0, roi_end = 1;
};

/// Input coordinate of output index y, per coordinate_transformation_mode
/// (Operators.md, Resize):
///   half_pixel            (y + 0.5) / scale - 0.5
///   pytorch_half_pixel    length_resized > 1 ? (y + 0.5) / scale - 0.5 : 0
///   asymmetric            y / scale
///   align_corners         length_resized > 1 ? y * (in - 1) / (length_resized - 1) : 0
///   tf_half_pixel_for_nn  (y + 0.5) / scale
///   tf_crop_and_resize    length_resized > 1 ? start * (in - 1) + y * (end - start) * (in - 1) / (length_resized - 1)
///                                            : (start + end) * (in - 1) / 2
/// (opset 10 has no attribute: asymmetric).
double SourceCoordinate(const ResizeMode& mode, const AxisResize& axis, std::int64_t y);

/// The sample table of one axis. nearest: floor(x) or floor(x) + 1 by
/// nearest_mode (opset 10: ceil when downsampling, floor otherwise, as ONNX
/// Runtime); linear: floor(x) and floor(x) + 1 with weights 1 - r and r
/// (r = x - floor(x)); cubic: floor(x) - 1 .. floor(x) + 2 with Keys' weights
/// (R. Keys, "Cubic convolution interpolation for digital image processing",
/// IEEE TASSP 1981, with A = cubic_coeff_a). An integer x reads x alone.
AxisSamples SampleAxis(const ResizeMode& mode, const AxisResize& axis);

/// Resize as one pass per resampled axis, planned once at build: x plain
/// row-major float32 of `in_dims`, y plain row-major of the axes' `out` sizes.
struct SeparableResize {
  /// One resampled axis: [outer, in, inner] -> [outer, out, inner].
  struct Pass {
    AxisSamples samples;
    std::int64_t outer = 1, inner = 1;
  };
  std::vector<Pass> passes;       ///< the axes that are not Identity(), in order; none: y is a copy of x
  std::int64_t elements = 0;      ///< of x, for the copy
  std::int64_t scratch_half = 0;  ///< floats of each scratch buffer between passes
  float extrapolation_value = 0;  ///< tf_crop_and_resize's value outside the input

  /// Floats of scratch ResizeSeparable needs: none for one pass, one buffer
  /// for two, two it alternates between for more.
  std::int64_t ScratchElements() const;
};

/// The passes for X of `in_dims`, axes[d] describing axis d.
SeparableResize PlanSeparableResize(const std::vector<std::int64_t>& in_dims, const std::vector<AxisSamples>& axes,
                                    float extrapolation_value);

/// y = Resize(x) by `plan`, through `scratch` (plan.ScratchElements() floats).
/// Rows are split over OpenMP threads.
void ResizeSeparable(const SeparableResize& plan, const float* x, float* y, float* scratch);

}  // namespace onnxfuse::backend
