#include "conv_reference.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include <onnx/defs/tensor_proto_util.h>

namespace onnxfuse::test {

namespace {

Tensor FromProto(const onnx::TensorProto& t) {
  Tensor out{{t.dims().begin(), t.dims().end()}, {}};
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    auto v = onnx::ParseData<float>(&t);  // libonnx's decoder: also checks what the pass wrote
    out.data.assign(v.begin(), v.end());
  } else {
    REQUIRE(t.data_type() == onnx::TensorProto::DOUBLE);
    out.data = onnx::ParseData<double>(&t);
  }
  return out;
}

std::vector<std::int64_t> Ints(const onnx::NodeProto& node, const std::string& name,
                               std::vector<std::int64_t> fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return fallback;
}

std::int64_t Int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// Conv and ConvTranspose in 2-D, straight from the ONNX operator definitions.
Tensor Convolve(const onnx::NodeProto& node, Tensor& x, Tensor& w, const Tensor* b) {
  const bool transpose = node.op_type() == "ConvTranspose";
  const auto G = Int(node, "group", 1);
  const auto s = Ints(node, "strides", {1, 1}), d = Ints(node, "dilations", {1, 1}),
             p = Ints(node, "pads", {0, 0, 0, 0});
  const auto N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3], KH = w.dims[2], KW = w.dims[3];
  const auto M = transpose ? w.dims[1] * G : w.dims[0];
  const auto cin_g = C / G, cout_g = M / G;
  Tensor y;
  if (!transpose)
    y.dims = {N, M, (H + p[0] + p[2] - d[0] * (KH - 1) - 1) / s[0] + 1,
              (W + p[1] + p[3] - d[1] * (KW - 1) - 1) / s[1] + 1};
  else
    y.dims = {N, M, (H - 1) * s[0] - p[0] - p[2] + d[0] * (KH - 1) + 1,
              (W - 1) * s[1] - p[1] - p[3] + d[1] * (KW - 1) + 1};
  y.data.assign(static_cast<std::size_t>(N * M * y.dims[2] * y.dims[3]), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t j = 0; j < cout_g; ++j)
        for (std::int64_t i = 0; i < cin_g; ++i) {
          const auto ci = g * cin_g + i, co = g * cout_g + j;
          for (std::int64_t kh = 0; kh < KH; ++kh)
            for (std::int64_t kw = 0; kw < KW; ++kw) {
              // Conv: W[co, i, kh, kw]; ConvTranspose: W[ci, j, kh, kw] scattered to strided positions.
              const double wv = transpose ? w.at(ci, j, kh, kw) : w.at(co, i, kh, kw);
              if (!transpose) {
                for (std::int64_t oh = 0; oh < y.dims[2]; ++oh)
                  for (std::int64_t ow = 0; ow < y.dims[3]; ++ow) {
                    const auto ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W) y.at(n, co, oh, ow) += wv * x.at(n, ci, ih, iw);
                  }
              } else {
                for (std::int64_t ih = 0; ih < H; ++ih)
                  for (std::int64_t iw = 0; iw < W; ++iw) {
                    const auto oh = ih * s[0] - p[0] + kh * d[0], ow = iw * s[1] - p[1] + kw * d[1];
                    if (oh >= 0 && oh < y.dims[2] && ow >= 0 && ow < y.dims[3])
                      y.at(n, co, oh, ow) += wv * x.at(n, ci, ih, iw);
                  }
              }
            }
        }
  if (b)
    for (std::size_t e = 0; e < y.data.size(); ++e)
      y.data[e] += b->data[(e / static_cast<std::size_t>(y.dims[2] * y.dims[3])) % static_cast<std::size_t>(M)];
  return y;
}

}  // namespace

std::map<std::string, Tensor> Run(const onnx::ModelProto& model, std::map<std::string, Tensor> env) {
  for (const auto& t : model.graph().initializer()) env[t.name()] = FromProto(t);
  for (const auto& node : model.graph().node()) {
    auto in = [&](int i) -> Tensor& { return env.at(node.input(i)); };
    const std::string& op = node.op_type();
    Tensor y;
    if (op == "Constant") {
      y = FromProto(node.attribute(0).t());
    } else if (op == "Conv" || op == "ConvTranspose") {
      y = Convolve(node, in(0), in(1), node.input_size() > 2 && !node.input(2).empty() ? &in(2) : nullptr);
    } else if (op == "BatchNormalization") {
      y = in(0);
      double eps = 1e-5;
      for (const auto& a : node.attribute())
        if (a.name() == "epsilon") eps = a.f();
      const auto plane = static_cast<std::size_t>(y.dims[2] * y.dims[3]), C = static_cast<std::size_t>(y.dims[1]);
      for (std::size_t e = 0; e < y.data.size(); ++e) {
        const auto c = (e / plane) % C;
        y.data[e] = (y.data[e] - in(3).data[c]) / std::sqrt(in(4).data[c] + eps) * in(1).data[c] + in(2).data[c];
      }
    } else if (op == "Identity") {
      y = in(0);
    } else if (op == "Relu") {
      y = in(0);
      for (auto& v : y.data) v = std::max(v, 0.0);
    } else if (op == "Add") {
      y = in(0);
      for (std::size_t e = 0; e < y.data.size(); ++e) y.data[e] += in(1).data[e];
    } else {
      FAIL("the reference interpreter has no " << op);
    }
    env[node.output(0)] = std::move(y);
  }
  std::map<std::string, Tensor> outputs;
  for (const auto& o : model.graph().output()) outputs[o.name()] = env.at(o.name());
  return outputs;
}

double MaxRelativeDifference(const onnx::ModelProto& reference, const onnx::ModelProto& candidate) {
  std::map<std::string, Tensor> inputs;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const auto& vi : reference.graph().input()) {
    bool is_initializer = false;
    for (const auto& t : reference.graph().initializer()) is_initializer |= t.name() == vi.name();
    if (is_initializer) continue;
    Tensor t;
    for (const auto& d : vi.type().tensor_type().shape().dim()) t.dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
    t.data.resize(static_cast<std::size_t>(t.dims[0] * t.dims[1] * t.dims[2] * t.dims[3]));
    for (auto& v : t.data) v = static_cast<float>(uniform(rng));
    inputs[vi.name()] = t;
  }
  auto a = Run(reference, inputs), b = Run(candidate, inputs);
  double worst = 0;
  for (auto& [name, ref] : a) {
    const Tensor& cand = b.at(name);
    REQUIRE(cand.dims == ref.dims);
    double diff = 0, scale = 0;
    for (std::size_t e = 0; e < ref.data.size(); ++e) {
      diff = std::max(diff, std::fabs(ref.data[e] - cand.data[e]));
      scale = std::max(scale, std::fabs(ref.data[e]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace onnxfuse::test
