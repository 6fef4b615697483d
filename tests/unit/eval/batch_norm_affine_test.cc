// BatchNormalization as a per-channel affine map and its fold into weights and
// bias (src/eval/batch_norm_affine.cc): the ONNX formula, the composition of
// two maps, and the output channels of each weight layout.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "eval/batch_norm_affine.h"

using namespace onnxfuse;
using eval::WeightLayout;

TEST_CASE("BatchNormAffine is ONNX's inference formula as scale and shift", "[eval][batch_norm_affine]") {
  // y = scale * (x - mean) / sqrt(var + epsilon) + B
  const eval::ChannelAffine a = eval::BatchNormAffine({2.0, 1.0}, {1.0, -1.0}, {3.0, 0.5}, {3.0, 0.0}, 1.0);
  for (std::size_t c = 0; c < 2; ++c) {
    const double scale[] = {2.0, 1.0}, bias[] = {1.0, -1.0}, mean[] = {3.0, 0.5}, var[] = {3.0, 0.0};
    for (double x : {-2.0, 0.0, 5.0}) {
      const double y = scale[c] * (x - mean[c]) / std::sqrt(var[c] + 1.0) + bias[c];
      CHECK(a.scale[c] * x + a.shift[c] == Approx(y));
    }
  }
  CHECK(a.scale == std::vector<double>{1.0, 1.0});
  CHECK(a.shift == std::vector<double>{-2.0, -1.5});
}

TEST_CASE("ComposeAffine applies the first map, then the second", "[eval][batch_norm_affine]") {
  const eval::ChannelAffine first{{2.0, 3.0}, {1.0, 0.0}}, then{{0.5, -1.0}, {4.0, 2.0}};
  const eval::ChannelAffine both = eval::ComposeAffine(first, then);
  for (std::size_t c = 0; c < 2; ++c)
    for (double x : {-1.0, 0.0, 7.0})
      CHECK(both.scale[c] * x + both.shift[c] == then.scale[c] * (first.scale[c] * x + first.shift[c]) + then.shift[c]);
}

TEST_CASE("ScaleWeights scales each output channel, FoldIntoBias scales and shifts the bias",
          "[eval][batch_norm_affine]") {
  const eval::ChannelAffine affine{{2.0, 0.5}, {1.0, -1.0}};
  std::vector<float> weights = {1, 2, 3, -4, 5, 6};  // [2 outputs, 3]
  eval::ScaleWeights(weights, {2, 3}, WeightLayout::kOutputMajor, 1, affine.scale);
  CHECK(weights == std::vector<float>{2, 4, 6, -2, 2.5f, 3});
  std::vector<double> bias = {0.1, 0.2};
  eval::FoldIntoBias(bias, affine);
  CHECK(bias[0] == 0.1 * 2 + 1);
  CHECK(bias[1] == 0.2 * 0.5 - 1);

  eval::ScaleWeights(weights, {2, 3}, WeightLayout::kOutputMajor, 1, {});  // no map: unchanged
  CHECK(weights == std::vector<float>{2, 4, 6, -2, 2.5f, 3});
}

TEST_CASE("ScaleWeights finds ConvTranspose's output channels across its groups", "[eval][batch_norm_affine]") {
  // W is (C_in = 4, C_out/group = 1, 1) with group 2: input channels 0 and 1
  // feed output channel 0, input channels 2 and 3 output channel 1.
  std::vector<double> weights = {1, 1, 1, 1};
  eval::ScaleWeights(weights, {4, 1, 1}, WeightLayout::kConvTranspose, 2, {10.0, 100.0});
  CHECK(weights == std::vector<double>{10, 10, 100, 100});
  // group 1, (C_in = 2, C_out = 2, 1): W[i, j] feeds output channel j.
  std::vector<double> ungrouped = {1, 1, 1, 1};
  eval::ScaleWeights(ungrouped, {2, 2, 1}, WeightLayout::kConvTranspose, 1, {10.0, 100.0});
  CHECK(ungrouped == std::vector<double>{10, 100, 10, 100});
}
