// Layout changes that oneDNN 2.6's reorder does slowly, as our own loops.
//
// A network's input image is planar (NCHW, three channels), and its first
// convolution runs fastest on channels-last (NHWC) data. oneDNN's reorder
// (jit:uni) takes 0.044 ms for a 3x224x224 image on one Zen core, about
// 13 GB/s; interleaving the three planes with AVX-512 permutes takes
// 0.013 ms: 0.8% of MobileNetV2's inference.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// Whether NchwToNhwc3 runs on this CPU (AVX-512, cpu_isa.h); else use
/// oneDNN's reorder.
bool HaveNchwToNhwc3();

/// dst [images, pixels, 3] (NHWC) = src [images, 3, pixels] (NCHW), float32,
/// pixels = H * W; the buffers do not overlap. Split over OpenMP threads by
/// blocks of pixels. Requires HaveNchwToNhwc3().
void NchwToNhwc3(const float* src, float* dst, std::int64_t images, std::int64_t pixels);

}  // namespace onnxfuse::backend
