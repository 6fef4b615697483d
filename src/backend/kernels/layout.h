// Layout changes that oneDNN 2.6's reorder does slowly, as our own loops.
//
// A network's input image is planar (NCHW, three channels), and its first
// convolution runs fastest on channels-last (NHWC) data. oneDNN's reorder
// (jit:uni) takes 0.044 ms for a 3x224x224 image on one Zen core, about
// 13 GB/s; interleaving the three planes with AVX-512 permutes takes
// 0.013 ms: 0.8% of MobileNetV2's inference.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxfuse::backend {

/// Whether NchwToNhwc3 runs on this CPU (AVX-512, cpu_isa.h); else use
/// oneDNN's reorder.
bool HaveNchwToNhwc3();

/// dst [images, pixels, 3] (NHWC) = src [images, 3, pixels] (NCHW), float32,
/// pixels = H * W; the buffers do not overlap. Split over OpenMP threads by
/// blocks of pixels. Requires HaveNchwToNhwc3().
void NchwToNhwc3(const float* src, float* dst, std::int64_t images, std::int64_t pixels);

/// dst = src for float32 tensors of logical `dims` (row-major order of the
/// ONNX value) held with any element strides: src[offset sum of i_k *
/// src_strides[k]] -> dst[sum of i_k * dst_strides[k]], strides in elements.
/// A Transpose's view made plain ([1, 4, S, 64] seen as [1, S, 4, 64]) is
/// such a copy. It takes every extent as data, where oneDNN's reorder is a
/// JIT kernel generated for one shape (used where the dims change from one
/// compiled shape to the next). One thread; the buffers do not overlap.
void StridedCopy(const float* src, const std::vector<std::int64_t>& src_strides, float* dst,
                 const std::vector<std::int64_t>& dst_strides, const std::vector<std::int64_t>& dims);

}  // namespace onnxfuse::backend
