// Concat -> BatchNormalization (-> Relu) as one pass of our own.
//
// DenseNet (Huang et al., "Densely Connected Convolutional Networks", 2017)
// concatenates all earlier feature maps before each layer and normalizes the
// result at once (BN-ReLU-Conv, the pre-activation order). Run as two
// primitives, the concatenation is written out whole and read straight back
// by the normalization: each layer moves its growing input four times. The
// fused kernel reads each source once and writes the normalized result once,
// the traffic of the normalization alone. The normalization is the ONNX
// BatchNormalization inference formula, folded per channel into y = x * k + t
// (BatchNormAffine).
#include "backend/lower/fused/concat_norm.h"

#include <algorithm>
#include <cmath>

#include "ir/attributes.h"
#include "backend/lower/ops/batch_norm.h"
#include "backend/lower/ops/concat.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/target_clones.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// One source of the fused kernel: `channels` channels, written at channel
// `offset` of each destination row; channels-last (`block` 0: a row of
// `channels` per pixel) or channel-blocked (nChw8c: `block` 8, channels
// padded up to `padded`; oneDNN's choice on AVX2).
struct ConcatSource {
  std::int64_t channels = 0;
  std::int64_t offset = 0;
  std::int64_t block = 0, padded = 0;
};

template <bool kRelu>
inline void ScaleShiftRun(const float* in, float* out, const float* k, const float* t, std::int64_t n) {
  for (std::int64_t c = 0; c < n; ++c) {
    float y = in[c] * k[c] + t[c];
    out[c] = kRelu && !(y > 0.f) ? 0.f : y;  // NaN to 0, as oneDNN's Relu
  }
}

// dst[r, offset_i + c] = f(src_i[r, c] * k[offset_i + c] + t[offset_i + c]) over
// `rows` rows (images x `pixels`) of `total` channels (channels-last: a row is
// one pixel). Compiled for AVX-512, AVX2 and baseline x86-64, chosen at load
// time by the CPU.
template <bool kRelu>
ONNXFUSE_TEMPLATE_CLONES void ScaleShiftConcat(
    const std::vector<void*>& data, const std::vector<ConcatSource>& sources, const float* k, const float* t,
    std::int64_t rows, std::int64_t pixels, std::int64_t total) {
  auto* dst = static_cast<float*>(data.back());
#pragma omp parallel for schedule(static) if (rows * total > 4096)
  for (std::int64_t r = 0; r < rows; ++r) {
    float* out = dst + r * total;
    const std::int64_t image = r / pixels, pixel = r % pixels;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const ConcatSource& s = sources[i];
      const auto* src = static_cast<const float*>(data[i]);
      if (s.block == 0) {
        ScaleShiftRun<kRelu>(src + r * s.channels, out + s.offset, k + s.offset, t + s.offset, s.channels);
        continue;
      }
      for (std::int64_t first = 0; first < s.channels; first += s.block) {  // one channel block of this pixel
        const float* in = src + ((image * s.padded + first) * pixels + pixel * s.block);
        const std::int64_t o = s.offset + first;
        ScaleShiftRun<kRelu>(in, out + o, k + o, t + o, std::min(s.block, s.channels - first));
      }
    }
  }
}

// out[p, c] = f(in[p, c] * k[c] + t[c]) for `pixels` pixels of one kBlock
// channel block: k and t stay in registers, one vector (or two) per pixel.
template <bool kRelu, int kBlock>
__attribute__((always_inline)) inline void ScaleShiftPixels(const float* in, float* out, const float* k, const float* t,
                                                            std::int64_t pixels) {
  float kk[kBlock], tt[kBlock];
  std::copy(k, k + kBlock, kk), std::copy(t, t + kBlock, tt);
  for (std::int64_t p = 0; p < pixels; ++p, in += kBlock, out += kBlock)
    for (int c = 0; c < kBlock; ++c) {
      const float y = in[c] * kk[c] + tt[c];
      out[c] = kRelu && !(y > 0.f) ? 0.f : y;  // NaN to 0, as oneDNN's Relu
    }
}

// The same into a channel-blocked destination (padded channels `padded`,
// block `block`) when every source is blocked so and starts at a multiple of
// the block: each source block of each image is one run of pixels x block
// values, scaled and shifted by its channels' k and t (padded with zeros:
// the destination's padding stays 0).
template <bool kRelu>
ONNXFUSE_TEMPLATE_CLONES void ScaleShiftConcatBlocked(
    const std::vector<void*>& data, const std::vector<ConcatSource>& sources, const float* k, const float* t,
    std::int64_t images, std::int64_t pixels, std::int64_t padded, std::int64_t block) {
  auto* dst = static_cast<float*>(data.back());
  std::vector<std::pair<std::size_t, std::int64_t>> runs;  // (source, first channel in it) per destination block
  for (std::size_t i = 0; i < sources.size(); ++i)
    for (std::int64_t first = 0; first < sources[i].padded; first += block) runs.emplace_back(i, first);
  const auto count = static_cast<std::int64_t>(runs.size());
#pragma omp parallel for collapse(2) schedule(static) if (images * padded * pixels > 4096)
  for (std::int64_t image = 0; image < images; ++image)
    for (std::int64_t r = 0; r < count; ++r) {
      const auto [i, first] = runs[static_cast<std::size_t>(r)];
      const ConcatSource& s = sources[i];
      const std::int64_t channel = s.offset + first;
      const float* in = static_cast<const float*>(data[i]) + (image * s.padded + first) * pixels;
      float* out = dst + (image * padded + channel) * pixels;
      const float *kb = k + channel, *tb = t + channel;
      if (block == 8) ScaleShiftPixels<kRelu, 8>(in, out, kb, tb, pixels);
      else if (block == 16) ScaleShiftPixels<kRelu, 16>(in, out, kb, tb, pixels);
      else
        for (std::int64_t p = 0; p < pixels; ++p) ScaleShiftRun<kRelu>(in + p * block, out + p * block, kb, tb, block);
    }
}

}  // namespace

bool TryConcatNorm(Builder& b, const Node& node) {
  const Node* bn = SoleUser(b, node.outputs.at(0), "BatchNormalization");
  if (!bn || bn->inputs[0] != node.outputs[0]) return false;
  for (std::size_t i = 1; i < bn->outputs.size(); ++i)
    if (bn->outputs[i] != kNoValue && !b.graph.value(bn->outputs[i]).consumers.empty()) return false;
  std::optional<eval::ChannelAffine> affine = BatchNormAffine(b, *bn);
  if (!affine) return false;

  std::optional<ChannelParts> parts = ChannelPartsOf(b, node);
  if (!parts) return false;
  const Dims& out = parts->out;
  std::vector<Arg> srcs;
  std::vector<ConcatSource> sources;
  std::int64_t offset = 0;
  for (ValueId v : parts->values) {
    const Act& a = b.ActOf(v, node);
    const memory::desc want = ChannelsLastDesc(a.dims);
    if (want.is_zero()) return false;
    if (const std::int64_t block = ChannelBlockOf(a.md, a.dims)) {
      sources.push_back({a.dims[1], offset, block, a.md.data.padded_dims[1]});
      srcs.push_back(b.UseAsIs(v, node));
    } else if (a.md == want || (IsPlainEquivalent(a.md) && IsPlainEquivalent(want))) {
      sources.push_back({a.dims[1], offset});
      srcs.push_back(b.Use(v, want, node));
    } else {
      return false;
    }
    offset += a.dims[1];
  }

  if (static_cast<std::int64_t>(affine->scale.size()) != out[1])
    Unsupported(b, *bn, "parameters must have one value per channel");
  std::vector<float> k(affine->scale.begin(), affine->scale.end()), t(affine->shift.begin(), affine->shift.end());

  const Node* relu = SoleUser(b, bn->outputs[0], "Relu");
  std::vector<const Node*> absorbed = {bn};
  if (relu) absorbed.push_back(relu);
  std::string label = node.name + "+" + bn->name + (relu ? "+" + relu->name : "");

  // Blocked parts at block boundaries (DenseNet's 32-channel growth on AVX2)
  // give a blocked result, the layout the next convolution wants; else channels-last.
  const std::int64_t block = sources[0].block;
  const bool blocked = block > 0 && std::all_of(sources.begin(), sources.end(), [&](const ConcatSource& s) {
    return s.block == block && s.offset % block == 0;
  });
  const memory::desc dst_md = blocked ? ChannelBlockedDesc(out, block) : ChannelsLastDesc(out);
  Act dst = b.NewAct(out, dst_md);
  std::vector<std::pair<int, Arg>> args;
  for (std::size_t i = 0; i < srcs.size(); ++i) args.emplace_back(static_cast<int>(i), srcs[i]);
  args.emplace_back(static_cast<int>(srcs.size()), Arg{dst.slot, dst_md, {}});
  const std::int64_t rows = Product(out) / out[1], pixels = rows / out[0], total = out[1];
  CustomKernel kernel;
  if (blocked) {
    const std::int64_t padded = dst_md.data.padded_dims[1];
    k.resize(static_cast<std::size_t>(padded), 0.f), t.resize(static_cast<std::size_t>(padded), 0.f);
    kernel = [sources, k, t, images = out[0], pixels, padded, block, relu = relu != nullptr](const std::vector<void*>& data) {
      if (relu) ScaleShiftConcatBlocked<true>(data, sources, k.data(), t.data(), images, pixels, padded, block);
      else ScaleShiftConcatBlocked<false>(data, sources, k.data(), t.data(), images, pixels, padded, block);
    };
  } else {
    kernel = [sources, k, t, rows, pixels, total, relu = relu != nullptr](const std::vector<void*>& data) {
      if (relu) ScaleShiftConcat<true>(data, sources, k.data(), t.data(), rows, pixels, total);
      else ScaleShiftConcat<false>(data, sources, k.data(), t.data(), rows, pixels, total);
    };
  }
  b.EmitCustom("concat_batch_norm", label, std::move(args), std::move(kernel), dst_md);
  Absorb(b, absorbed);
  b.SetAct((relu ? relu : bn)->outputs[0], dst);
  return true;
}

}  // namespace onnxfuse::backend
