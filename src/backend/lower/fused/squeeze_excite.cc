// The excitation of a squeeze-and-excitation block as one kernel of our own.
//
// Squeeze-and-excitation (Hu et al., "Squeeze-and-Excitation Networks", 2018)
// turns the channel means m [1, C, 1, 1] of a feature map into a gate:
//   s = act2(W2 act1(W1 m + b1) + b2),  W1 [C/r, C], W2 [C, C/r],
// exported to ONNX as two 1x1 Convs on a 1x1 map: act1 is Relu (MobileNetV3,
// RegNetY) or swish, x * Sigmoid(x) (EfficientNet); act2 is Sigmoid or
// HardSigmoid (MobileNetV3). Lowered node by node, that is two convolution
// primitives (and a swish step) each doing a few thousand multiply-adds, each
// paying a primitive's and, with several threads, a thread team's fixed cost:
// EfficientNet-B0 has 16 such blocks. Here the two matrix-vector products and
// both activations run as one step, on one thread when the weights are small.
#include "backend/lower/fused/squeeze_excite.h"

#include <algorithm>
#include <cmath>

#include "ir/attributes.h"
#include "backend/kernels/gemv.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/graph_queries.h"
#include "backend/lower/core/operands.h"

namespace onnxfuse::backend {

namespace {

using Act1 = SqueezeExcite::Act1;

// A 1x1 Conv of `in` (dims `x`: [1, C, 1, 1]) with constant weights [M, C, 1, 1]
// whose output is [1, M, 1, 1]; its weights' M, else 0.
std::int64_t PointwiseOnPixel(Builder& b, const Node& conv, ValueId in, const Dims& x) {
  if (!ConvReadsAsData(b, conv, in) || b.Const(conv.inputs[1], conv).elem_type != onnx::TensorProto::FLOAT) return 0;
  if (conv.inputs.size() > 2 && conv.inputs[2] != kNoValue && !b.IsConst(conv.inputs[2])) return 0;
  const Dims w = b.DimsOfValue(conv.inputs[1], conv);
  if (x.size() != 4 || x[0] != 1 || x[2] != 1 || x[3] != 1 || w.size() != 4 || w[2] != 1 || w[3] != 1 || w[1] != x[1])
    return 0;
  return ConvGeometryOf(b, conv, x, w).out == Dims{1, w[0], 1, 1} ? w[0] : 0;
}

// Input `i` of `node` (a bias of `n` values; zeros when absent) as floats.
std::vector<float> BiasFloats(Builder& b, const Node& node, std::size_t i, std::int64_t n) {
  const std::vector<double> values = BiasOf(b, node, i, n);
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace

bool BindSqueezeExcite(Builder& b, SqueezeExcite& se) {
  const Node& fc1 = *se.fc1;
  if (!b.fuse || fc1.op_type != "Conv" || !fc1.domain.empty() || !b.IsAct(fc1.inputs.at(0))) return false;
  const ValueId m = fc1.inputs[0];
  se.reduced = PointwiseOnPixel(b, fc1, m, b.ActOf(m, fc1).dims);
  if (se.reduced == 0 || b.graph.value(fc1.outputs[0]).is_graph_output) return false;
  se.channels = b.ActOf(m, fc1).dims[1];
  const ValueId h = se.act1.back()->outputs[0];
  if (PointwiseOnPixel(b, *se.fc2, h, {1, se.reduced, 1, 1}) != se.channels) return false;
  se.hard_gate = se.gate->op_type == "HardSigmoid";
  if (se.hard_gate) se.alpha = AttrFloat(*se.gate, "alpha", 0.2f), se.beta = AttrFloat(*se.gate, "beta", 0.5f);
  return true;
}

void EmitSqueezeExcite(Builder& b, const SqueezeExcite& se) {
  const Node &fc1 = *se.fc1, &fc2 = *se.fc2;
  const ValueId m = fc1.inputs[0];
  const std::int64_t reduced = se.reduced, channels = se.channels;
  std::vector<const Node*> nodes = {&fc1};
  nodes.insert(nodes.end(), se.act1.begin(), se.act1.end());
  nodes.push_back(&fc2), nodes.push_back(se.gate);

  // Weights [M, C, 1, 1] are row-major [M, C] already.
  auto constant = [&](const std::vector<float>& values, std::int64_t n) {
    dnnl::memory mem = b.HostMemory(PlainDesc({n}), values.data());
    return Arg{-1, mem.get_desc(), mem};
  };
  const Arg w1 = constant(b.Const(fc1.inputs[1], fc1).data, reduced * channels);
  const Arg b1 = constant(BiasFloats(b, fc1, 2, reduced), reduced);
  const Arg w2 = constant(b.Const(fc2.inputs[1], fc2).data, channels * reduced);
  const Arg b2 = constant(BiasFloats(b, fc2, 2, channels), channels);
  const Arg in = b.UsePlain(m, fc1);
  const Dims gate_dims = {1, channels, 1, 1};
  const Act out = b.NewAct(gate_dims, PlainDesc(gate_dims));
  const Act hidden = b.NewAct({reduced}, PlainDesc({reduced}));
  CustomKernel kernel = [reduced, channels, act1 = se.kind, hard = se.hard_gate, alpha = se.alpha,
                         beta = se.beta](const std::vector<void*>& data) {
    const auto* x = static_cast<const float*>(data[0]);
    auto* z = static_cast<float*>(data[5]);
    auto* y = static_cast<float*>(data[6]);
    MatVec(static_cast<const float*>(data[1]), static_cast<const float*>(data[2]), x, z, reduced, channels);
    for (std::int64_t i = 0; i < reduced; ++i) z[i] = act1 == Act1::kRelu ? (z[i] > 0.f ? z[i] : 0.f) : z[i] / (1.f + std::exp(-z[i]));
    MatVec(static_cast<const float*>(data[3]), static_cast<const float*>(data[4]), z, y, channels, reduced);
    for (std::int64_t c = 0; c < channels; ++c)
      y[c] = hard ? std::clamp(alpha * y[c] + beta, 0.f, 1.f) : 1.f / (1.f + std::exp(-y[c]));
  };
  std::string label;
  for (const Node* n : nodes) label += (label.empty() ? "" : "+") + n->name;
  b.EmitCustom("squeeze_excite", label,
               {{0, in}, {1, w1}, {2, b1}, {3, w2}, {4, b2}, {5, Arg{hidden.slot, hidden.md, {}}}, {6, Arg{out.slot, out.md, {}}}}, std::move(kernel), out.md);
  Absorb(b, nodes);
  b.SetAct(se.gate->outputs[0], out);
}

}  // namespace onnxfuse::backend
