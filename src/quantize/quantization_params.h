// The numbers of a QDQ model: each activation's scale and zero point, each
// weight's int8 values and per-channel scales, each bias's int32 values.
//
// The formulas are ONNX Runtime's static quantizer's with its QDQ defaults
// (onnxruntime/python/tools/quantization/quant_utils.py, compute_scale_zp and
// quantize_data; qdq_quantizer.py for the bias): activations uint8, per
// tensor, asymmetric; weights int8, per output channel, symmetric; biases
// int32 at input scale x weight scale with zero point 0. Rounding is half to
// even (numpy's rint, and ONNX QuantizeLinear's).
#pragma once

#include <cstdint>
#include <vector>

namespace onnxfuse::quantize {

/// A uint8 activation's quantization: x ~ (q - zero_point) * scale.
struct ActivationParams {
  float scale = 1.0f;
  std::uint8_t zero_point = 0;
};

/// The range [low, high] widened to hold 0 (so that 0 is exact, as zero
/// padding needs), over the 255 steps of uint8: scale (high - low) / 255,
/// zero point round(-low / scale) clamped to [0, 255]. A range of one
/// value gives scale 1.
ActivationParams ActivationParamsFor(double low, double high);

/// Weights quantized per channel along one axis.
struct QuantizedWeights {
  std::vector<std::int8_t> values;  ///< same dims and order as the float weights
  std::vector<float> scales;        ///< one per index of the axis: max |w| / qmax (1 for an all-zero channel)
};

/// `w` (row-major, `dims`) quantized per channel along `axis`, symmetric in
/// [-qmax, qmax] (qmax 127 for 8-bit weights; 63 is ONNX Runtime's
/// reduce_range, for CPUs without VNNI whose int8 kernels add pairs of
/// products in 16 bits), zero point 0.
QuantizedWeights QuantizeWeights(const std::vector<float>& w, const std::vector<std::int64_t>& dims, int axis, int qmax);

/// Bias `b` (one value per output channel) as int32 at scale input_scale *
/// weight_scales[c] (computed in float32, as ONNX Runtime does), zero point 0;
/// values beyond int32 saturate.
struct QuantizedBias {
  std::vector<std::int32_t> values;
  std::vector<float> scales;
};
QuantizedBias QuantizeBias(const std::vector<float>& b, float input_scale, const std::vector<float>& weight_scales);

}  // namespace onnxfuse::quantize
