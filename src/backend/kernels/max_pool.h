// 2-D max pooling on channel-vector layouts as our own loop.
//
// oneDNN 2.6's jit:avx2 max pooling takes 0.5-0.75 ms on one core of an AVX2
// Zen 3 for GoogLeNet's 3x3 poolings (64 channels at 112x112, stride 2;
// 192-256 channels at 28x28, stride 1): some 8x the time of its 9 vmaxps per
// output vector, and 12% of GoogLeNet's inference. Max is associative, so
// here the window is taken separably: per output row, the max over the
// window's input rows of every column, then per output the max over its
// window's columns of those (a 3x3 window at stride 1: 4 vector maxima per
// output, not 8), reading only where the window overlaps the image (ONNX
// MaxPool: padding never wins). GoogLeNet's 14 poolings: 3.4 -> 0.96 ms.
//
// Layout: `planes` planes of [height][width][lanes] floats. nChw8c / nChw16c
// is images x channel blocks planes of 8 / 16 lanes; nhwc one plane per image
// of `channels` lanes.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// The geometry of one max pooling (dilation 1); pads in elements, before the
/// first row / column.
struct MaxPoolShape {
  std::int64_t planes = 0, lanes = 0;
  std::int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

/// dst = max pooling of src (both in the layout above), over OpenMP threads.
/// An output whose window holds no input element is -inf (no valid ONNX
/// MaxPool has one).
void MaxPool2d(const float* src, float* dst, const MaxPoolShape& shape);

}  // namespace onnxfuse::backend
