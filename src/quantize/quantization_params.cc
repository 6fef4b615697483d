#include "quantize/quantization_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnxfuse::quantize {

ActivationParams ActivationParamsFor(double low, double high) {
  low = std::min(low, 0.0);
  high = std::max(high, 0.0);
  ActivationParams p;
  if (!(high > low)) return p;
  p.scale = static_cast<float>((high - low) / 255.0);
  const double zero = std::nearbyint(-low / static_cast<double>(p.scale));  // FE_TONEAREST: half to even
  p.zero_point = static_cast<std::uint8_t>(std::clamp(zero, 0.0, 255.0));
  return p;
}

QuantizedWeights QuantizeWeights(const std::vector<float>& w, const std::vector<std::int64_t>& dims, int axis,
                                 int qmax) {
  // Row-major: index = (outer * channels + c) * inner + i.
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const std::int64_t channels = dims[static_cast<std::size_t>(axis)];
  const auto at = [&](std::int64_t o, std::int64_t c, std::int64_t i) {
    return static_cast<std::size_t>((o * channels + c) * inner + i);
  };
  QuantizedWeights q;
  q.scales.assign(static_cast<std::size_t>(channels), 0.0f);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t i = 0; i < inner; ++i)
        q.scales[static_cast<std::size_t>(c)] = std::max(q.scales[static_cast<std::size_t>(c)], std::fabs(w[at(o, c, i)]));
  for (float& s : q.scales) s = s > 0.0f ? s / static_cast<float>(qmax) : 1.0f;
  q.values.resize(w.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t i = 0; i < inner; ++i) {
        const float r = std::nearbyint(w[at(o, c, i)] / q.scales[static_cast<std::size_t>(c)]);
        q.values[at(o, c, i)] = static_cast<std::int8_t>(std::clamp(r, -static_cast<float>(qmax), static_cast<float>(qmax)));
      }
  return q;
}

QuantizedBias QuantizeBias(const std::vector<float>& b, float input_scale, const std::vector<float>& weight_scales) {
  QuantizedBias q;
  q.scales.resize(b.size());
  q.values.resize(b.size());
  const double lowest = std::numeric_limits<std::int32_t>::lowest(), top = std::numeric_limits<std::int32_t>::max();
  for (std::size_t c = 0; c < b.size(); ++c) {
    q.scales[c] = input_scale * weight_scales[c];
    const double r = std::nearbyint(static_cast<double>(b[c] / q.scales[c]));
    q.values[c] = static_cast<std::int32_t>(std::clamp(r, lowest, top));
  }
  return q;
}

}  // namespace onnxfuse::quantize
