// Scales moved into their reader: a per-channel scale of a convolution's
// input onto its weights; a scalar factor of a MatMul operand onto its result
// (attention's Q / sqrt(d) before Q K^T: (k A) B = k (A B), an eltwise_linear
// post-op instead of a pass over Q).
//
// Squeeze-and-excitation (Hu et al., "Squeeze-and-Excitation Networks", 2018;
// in MobileNetV3, EfficientNet, RegNetY) ends in y = x * s, with x [1, C, H, W]
// and the gate s [1, C, 1, 1] computed at run time, and y is read only by the
// block's projection, a group-1 convolution. Since conv(x * s, W) = conv(x, W')
// with W'[o, c, ...] = W[o, c, ...] * s[c], the product y is never made: a
// small kernel scales the convolution's packed weights into a buffer of the
// arena, and the convolution reads x and that buffer. This pays where the
// weights have fewer elements than x (the early, wide-spatial blocks: e.g.
// 96x56x56 in against 24x96 weights), and a pass over x and one primitive are
// saved each time. Only for batch 1: the scale differs per image.
#include "backend/lower/fused/channel_scale.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "ir/attributes.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/own_kernels/own_kernels.h"
#include "backend/lower/core/target_clones.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// `length` consecutive elements of the packed weights, from `offset`, of one
// input channel.
struct ChannelRun {
  std::int64_t offset = 0, length = 0, channel = 0;
};

// out[r] = w[r] * s[channel of r] for every run. oneDNN's blocked weights keep
// an output-channel block innermost (Acdb16a, ...): runs of 16 to 64.
ONNXFUSE_TARGET_CLONES void ScaleRuns(const float* w, const float* s, float* out, const std::vector<ChannelRun>& runs,
                                      std::int64_t total) {
  const auto n = static_cast<std::int64_t>(runs.size());
#pragma omp parallel for schedule(static) if (total > (1 << 16))
  for (std::int64_t r = 0; r < n; ++r) {
    const ChannelRun& run = runs[static_cast<std::size_t>(r)];
    const float k = s[run.channel];
    for (std::int64_t i = run.offset; i < run.offset + run.length; ++i) out[i] = w[i] * k;
  }
}

// The input channel of every element of weights in `packed` (dims [O, C, k...]),
// as runs: a plain tensor holding each element's channel, reordered into the
// layout by oneDNN, which thus tells where each element goes (padding reads 0,
// harmless: its weights are 0).
std::vector<ChannelRun> ChannelRunsOf(Builder& b, const memory::desc& packed) {
  const Dims dims = packed.dims();
  const std::int64_t channels = dims.at(1), taps = Product(Dims(dims.begin() + 2, dims.end()));
  std::vector<float> index(static_cast<std::size_t>(Product(dims)));
  for (std::size_t i = 0; i < index.size(); ++i)
    index[i] = static_cast<float>((static_cast<std::int64_t>(i) / taps) % channels);
  memory channel = b.Prepack(b.HostView(PlainDesc(dims), index.data()), packed);
  const auto* c = static_cast<const float*>(channel.get_data_handle());
  const auto total = static_cast<std::int64_t>(packed.get_size() / sizeof(float));
  std::vector<ChannelRun> runs;
  for (std::int64_t i = 0; i < total; ++i) {
    const auto ch = static_cast<std::int64_t>(c[i]);
    if (runs.empty() || runs.back().channel != ch) runs.push_back(ChannelRun{i, 0, ch});
    ++runs.back().length;
  }
  return runs;
}

// The gate input of `mul` (dims [1, C, 1, 1] against the other's [1, C, ...]), or -1.
int GateInput(const Builder& b, const Node& mul) {
  if (mul.num_explicit_inputs != 2 || !b.IsAct(mul.inputs[0]) || !b.IsAct(mul.inputs[1])) return -1;
  for (int gate = 0; gate < 2; ++gate) {
    const Dims& x = b.ActOf(mul.inputs[static_cast<std::size_t>(1 - gate)], mul).dims;
    const Dims& s = b.ActOf(mul.inputs[static_cast<std::size_t>(gate)], mul).dims;
    if (x.size() < 3 || x[0] != 1 || s.size() != x.size() || s[1] != x[1] || s[1] == 1) continue;
    if (std::all_of(s.begin() + 2, s.end(), [](std::int64_t d) { return d == 1; }) && s[0] == 1) return gate;
  }
  return -1;
}

}  // namespace

bool DeferChannelScale(Builder& b, NodeId id) {
  const Node& mul = b.graph.node(id);
  if (!b.fuse || mul.op_type != "Mul" || !mul.domain.empty() || mul.outputs.size() != 1) return false;
  const int gate = GateInput(b, mul);
  if (gate < 0) return false;
  const Node* conv = SoleUser(b, mul.outputs[0], "Conv");
  if (!conv || !ConvReadsAsData(b, *conv, mul.outputs[0])) return false;
  const Dims& x = b.ActOf(mul.inputs[static_cast<std::size_t>(1 - gate)], mul).dims;
  const Dims w = b.DimsOfValue(conv->inputs[1], *conv);
  if (w.size() != x.size() || w[1] != x[1]) return false;
  // Scaling weights larger than x would move more data than scaling x; our
  // GEMM convolution scales x's channels as it packs them, at no cost.
  const Act& input = b.ActOf(mul.inputs[static_cast<std::size_t>(1 - gate)], mul);
  if (Product(w) > Product(x) && !ConvFitsGemm(b, *conv, input, w, ConvGeometryOf(b, *conv, x, w))) return false;
  b.deferred_scales[mul.outputs[0]] = id;
  return true;
}

ValueId ScaledInput(const Builder& b, ValueId v) {
  auto it = b.deferred_scales.find(v);
  if (it == b.deferred_scales.end()) return v;
  const Node& mul = b.graph.node(it->second);
  return mul.inputs[static_cast<std::size_t>(1 - GateInput(b, mul))];
}

Arg TakeChannelScale(Builder& b, ValueId v) {
  const Node& mul = b.graph.node(b.deferred_scales.at(v));
  const Arg gate = b.UsePlain(mul.inputs[static_cast<std::size_t>(GateInput(b, mul))], mul);
  b.deferred_scales.erase(v);
  b.Consume(mul);
  return gate;
}

Arg EmitScaledWeights(Builder& b, ValueId v, const memory& weights, const std::string& label) {
  const Node& mul = b.graph.node(b.deferred_scales.at(v));
  const Arg gate = TakeChannelScale(b, v);
  const memory::desc md = weights.get_desc();
  std::vector<ChannelRun> runs = ChannelRunsOf(b, md);
  const auto total = static_cast<std::int64_t>(md.get_size() / sizeof(float));
  const Act scaled = b.NewAct(md.dims(), md);
  CustomKernel kernel = [runs = std::move(runs), total](const std::vector<void*>& data) {
    ScaleRuns(static_cast<const float*>(data[0]), static_cast<const float*>(data[1]), static_cast<float*>(data[2]),
              runs, total);
  };
  b.EmitCustom("channel_scale", mul.name + " (on the weights of " + label + ")",
               {{0, Arg{-1, md, weights}}, {1, gate}, {2, Arg{scaled.slot, md, {}}}}, std::move(kernel), md);
  return Arg{scaled.slot, md, {}};
}

namespace {

// The factor k of `node` = x * k, k * x or x / k (k a constant float scalar,
// x a run-time tensor) as x's input index and the multiplier (k or 1/k); nullopt
// for anything else.
std::optional<std::pair<std::size_t, float>> ScalarFactor(Builder& b, const Node& node) {
  if (node.num_explicit_inputs != 2 || !node.domain.empty() || (node.op_type != "Mul" && node.op_type != "Div"))
    return std::nullopt;
  for (std::size_t x = 0; x < 2; ++x) {
    const ValueId k = node.inputs[1 - x];
    if (!b.IsAct(node.inputs[x]) || !b.IsConst(k) || (node.op_type == "Div" && x != 0)) continue;
    const Tensor& t = b.Const(k, node);
    // A scalar of no higher rank than x: the result has x's dims.
    if (t.elem_type != onnx::TensorProto::FLOAT || t.NumElements() != 1 || t.data[0] == 0.f ||
        t.dims.size() > b.ActOf(node.inputs[x], node).dims.size())
      continue;
    return std::make_pair(x, node.op_type == "Div" ? 1.f / t.data[0] : t.data[0]);
  }
  return std::nullopt;
}

}  // namespace

bool DeferScalarScale(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.fuse || node.outputs.size() != 1 || !ScalarFactor(b, node)) return false;
  const Node* matmul = SoleUser(b, node.outputs[0], "MatMul");
  if (!matmul || std::count(matmul->inputs.begin(), matmul->inputs.end(), node.outputs[0]) != 1) return false;
  b.deferred_scalars[node.outputs[0]] = id;
  return true;
}

ValueId TakeScalarScale(Builder& b, ValueId v, float& scale) {
  auto it = b.deferred_scalars.find(v);
  if (it == b.deferred_scalars.end()) return v;
  const Node& node = b.graph.node(it->second);
  b.deferred_scalars.erase(it);
  const auto factor = *ScalarFactor(b, node);
  scale *= factor.second;
  b.Consume(node);
  return node.inputs[factor.first];
}

}  // namespace onnxfuse::backend
