#include "eval/batch_norm_affine.h"

#include <cmath>
#include <cstddef>

namespace onnxfuse::eval {

ChannelAffine BatchNormAffine(const std::vector<double>& scale, const std::vector<double>& bias,
                              const std::vector<double>& mean, const std::vector<double>& var, double epsilon) {
  ChannelAffine affine;
  for (std::size_t c = 0; c < scale.size(); ++c) {
    const double a = scale[c] / std::sqrt(var[c] + epsilon);
    affine.scale.push_back(a);
    affine.shift.push_back(bias[c] - mean[c] * a);
  }
  return affine;
}

ChannelAffine ComposeAffine(const ChannelAffine& first, const ChannelAffine& then) {
  ChannelAffine r = then;
  for (std::size_t c = 0; c < r.scale.size(); ++c) {
    r.scale[c] = first.scale[c] * then.scale[c];
    r.shift[c] = first.shift[c] * then.scale[c] + then.shift[c];
  }
  return r;
}

namespace {

template <typename T>
void Scale(std::vector<T>& weights, const std::vector<std::int64_t>& dims, WeightLayout layout, std::int64_t group,
           const std::vector<double>& scale) {
  if (scale.empty() || weights.empty()) return;
  auto mul = [](T& w, double k) { w = static_cast<T>(static_cast<double>(w) * k); };
  if (layout == WeightLayout::kOutputMajor) {
    const std::size_t per_channel = weights.size() / static_cast<std::size_t>(dims.at(0));
    for (std::size_t i = 0; i < weights.size(); ++i) mul(weights[i], scale[i / per_channel]);
    return;
  }
  const auto rows = static_cast<std::size_t>(dims.at(0)), cols = static_cast<std::size_t>(dims.at(1));
  const std::size_t inner = weights.size() / (rows * cols);
  const std::size_t rows_per_group = rows / static_cast<std::size_t>(group);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const double k = scale[(i / rows_per_group) * cols + j];
      T* slab = weights.data() + (i * cols + j) * inner;
      for (std::size_t e = 0; e < inner; ++e) mul(slab[e], k);
    }
}

}  // namespace

void ScaleWeights(std::vector<float>& weights, const std::vector<std::int64_t>& dims, WeightLayout layout,
                  std::int64_t group, const std::vector<double>& scale) {
  Scale(weights, dims, layout, group, scale);
}

void ScaleWeights(std::vector<double>& weights, const std::vector<std::int64_t>& dims, WeightLayout layout,
                  std::int64_t group, const std::vector<double>& scale) {
  Scale(weights, dims, layout, group, scale);
}

void FoldIntoBias(std::vector<double>& bias, const ChannelAffine& affine) {
  for (std::size_t c = 0; c < affine.scale.size() && c < bias.size(); ++c)
    bias[c] = bias[c] * affine.scale[c] + affine.shift[c];
}

}  // namespace onnxfuse::eval
