// Activations whose oneDNN 2.6 kernels are slow here, as our own vectorized
// loops over a float buffer:
//   swish (SiLU) x * sigmoid(x) = x / (1 + exp(-x)): EfficientNet (Tan & Le,
//     2019), ONNX's `x * Sigmoid(x)`;
//   Gelu 0.5 x (1 + erf(x / sqrt(2))) (Hendrycks & Gimpel, 2016): ViT,
//     ConvNeXt, ONNX's `Div, Erf, Add, Mul, Mul` decomposition;
//   sigmoid and tanh, the LSTM's gates (backend/kernels/lstm.h).
//
// Why our own: oneDNN 2.6's eltwise_swish and eltwise_gelu_erf, as post-ops or
// primitives, cost 0.25-0.4 ns per element on the AMD Zen CI machine (0.35 ms
// for swish on a 96x112x112 tensor, four times a Relu there): a quarter of
// efficientnet_b0's time. Here (backend/kernels/vector_math.h) exp(v) = 2^n * 2^f (n = round(v log2 e),
// |f| <= 1/2, 2^f by its Taylor series to degree 6: relative error < 2e-7;
// 2^n by vscalefps on AVX-512, by the exponent bits with v log2 e clamped to
// [-126, 126] on AVX2; swish about 0.15 ns per element on one core); erfc(z) for z >= 0 by Abramowitz & Stegun
// 7.1.26 (absolute error < 1.5e-7). AVX-512 (vscalefps) or AVX2+FMA, chosen by
// the CPU at first use and capped, as oneDNN is, by ONEDNN_MAX_CPU_ISA; plain
// C++ (std::exp, std::erf) elsewhere.
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// data[i] = data[i] / (1 + exp(-data[i])) for i < count, over OpenMP threads.
/// NaN stays NaN.
void SwishInPlace(float* data, std::int64_t count);

/// SwishInPlace on `data` [blocks, rows, block] (a row is one pixel: dense
/// channels-last is one block of all channels, oneDNN's nChw16c blocks of
/// 16), and means[c] = the mean over the rows of the result's channel c <
/// `channels` (the rest is padding): squeeze-and-excitation's
/// GlobalAveragePool taken while the data is in cache, instead of in a pass
/// of its own. Sums in float, per OpenMP thread.
void SwishInPlaceWithMeans(float* data, std::int64_t blocks, std::int64_t rows, std::int64_t block,
                           std::int64_t channels, float* means);

/// means[n * channels + c] = the mean over the rows of channel c < `channels`
/// of image n < `images` of `data` [images, blocks, rows, block] (the layouts
/// of SwishInPlaceWithMeans): ONNX GlobalAveragePool into a plain [N, C, 1, 1].
/// oneDNN 2.6's jit:avx2 global pooling reads a 960x7x7 map at under 10 GB/s
/// (24 us in mobilenet_v3_large); vector sums over the rows read it from
/// cache at several times that. Sums in float; blocks over OpenMP threads.
void ChannelMeans(const float* data, std::int64_t images, std::int64_t blocks, std::int64_t rows, std::int64_t block,
                  std::int64_t channels, float* means);

/// dst[i] = 0.5 src[i] (1 + erf(src[i] / sqrt(2))) for i < count, over OpenMP
/// threads; `dst` may be `src`. Absolute error below 3e-7 |src[i]| on the
/// AVX paths (A&S's 1.5e-7 in erfc, halved, and float rounding: 2.7e-7 at
/// most over 2^20 values in [-6, 6]), about 1e-7 |src[i]| with std::erf.
void Gelu(const float* src, float* dst, std::int64_t count);

/// dst[i] = 1 / (1 + exp(-src[i])) (Sigmoid) and tanh(src[i]) (Tanh) for i <
/// count, on the calling thread alone (the LSTM's gates, a few hundred
/// values per time step: backend/kernels/lstm.h); `dst` may be `src`.
/// Relative error: sigmoid below 2e-6, as swish (exp's series, and x log2 e
/// rounded in float: about 1e-6 at x = -20), except where AVX2's exp
/// saturates (below -87: 1.2e-38 instead of 0); tanh below 5e-7 (its odd
/// Taylor series to x^9 for |x| < 0.25, 1 - 2 / (1 + exp(2x)) beyond, where
/// exp's error stays absolute no more). NaN stays NaN; std::exp and
/// std::tanh without AVX2.
void Sigmoid(const float* src, float* dst, std::int64_t count);
void Tanh(const float* src, float* dst, std::int64_t count);

}  // namespace onnxfuse::backend
