// 1x1 convolutions whose weights outweigh their activations (the 7x7 and
// 14x14 stages of MobileNets, EfficientNet, ResNet-50, DenseNet) as a GEMM of
// our own.
//
// At batch 1 such a layer reads its weights (0.1 to 1.6 MB, up to more than
// L2) once per inference, from L3 or memory. oneDNN 2.6's brgconv_1x1
// computes each 64-column panel of weights as it first reads it, so the first
// rows of every panel wait on memory: on one core of this AVX-512 machine,
// 320 -> 1280 channels at 7x7 takes 0.178 ms with warm caches and 0.214 ms
// with cold weights. This GEMM computes at the same rate warm (0.179 ms, 224
// GFLOPS) and prefetches the next panel into L2 while computing the current
// one (software prefetching: T. Mowry, M. Lam, A. Gupta, ASPLOS 1992), the
// last panel prefetching the next such convolution's first: 0.192 ms cold.
//
//   y[m, n] = epilogue(bias[n] + sum_k x[m, k] * w[k, n])
//
// x [rows, in_channels] and y [rows, out_channels] row-major (NHWC pixels);
// w packed in panels of 64 output channels (PointwiseConv).
#pragma once

#include <cstdint>
#include <vector>

namespace onnxfuse::backend {

/// Output channels per weight panel: four AVX-512 vectors.
constexpr std::int64_t kPointwisePanel = 64;

/// Whether PointwiseConv runs on this CPU (AVX-512, cpu_isa.h).
bool HavePointwiseConv();

/// One step of the epilogue, applied in order to each output.
struct PointwiseOp {
  enum class Kind { kAdd, kClamp, kLinear, kHardSwish, kSwish };
  Kind kind = Kind::kClamp;
  /// kClamp: [a, b]; kLinear: a * y + b; kHardSwish: y * clamp(a * y + b, 0, 1);
  /// kSwish (SiLU, ONNX's x * Sigmoid(x)): y / (1 + exp(-y)), exp as
  /// backend/kernels/vector_math.h's (std::exp on the scalar paths).
  float a = 0, b = 0;
};

/// The GEMM's shapes. out_channels is a multiple of 16.
struct PointwiseShape {
  std::int64_t rows = 0, in_channels = 0, out_channels = 0;
};

/// The first weight panel of the next PointwiseConv of the schedule: the last
/// panel of this one prefetches it (the step between them, a depthwise
/// convolution, does not need much of L2).
struct PointwiseNext {
  const float* weights = nullptr;  ///< nullptr: none
  std::int64_t in_channels = 0;
};

/// y = epilogue(bias + x * w). `w`: oihw weights [out_channels, in_channels]
/// blocked by kPointwisePanel output channels, each block [in_channels][64]
/// (oneDNN's blocked layout with inner block 64 on dim 0; the last block
/// zero-padded). `addend` [rows, out_channels], read by kAdd (nullptr when
/// there is none), may be `y` itself. Rows are split over OpenMP threads in
/// blocks of 12; each thread prefetches the weight panel after the one it
/// computes. Requires HavePointwiseConv().
void PointwiseConv(const float* x, const float* w, const float* bias, const float* addend, float* y,
                   const PointwiseShape& shape, const std::vector<PointwiseOp>& epilogue,
                   const PointwiseNext& next = {});

}  // namespace onnxfuse::backend
