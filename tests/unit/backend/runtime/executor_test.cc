// The oneDNN backend: small graphs run fused and unfused, numbers checked
// against values computed here by hand (naive loops in double).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

Tensor MakeTensor(std::vector<std::int64_t> dims, std::function<float(std::int64_t)> f, std::string name = "x") {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.data.push_back(f(i));
  return t;
}

// A fixed, sign-alternating ramp: far from zero and from symmetric cancellations.
Tensor Ramp(std::vector<std::int64_t> dims, std::string name = "x") {
  return MakeTensor(std::move(dims), [](std::int64_t i) { return static_cast<float>((i % 7) - 3) * 0.25f + 0.1f * static_cast<float>(i % 3); },
                    std::move(name));
}

// Naive NCHW convolution (one image), in double.
std::vector<double> NaiveConv(const Tensor& x, const std::vector<float>& w, std::vector<std::int64_t> wd,
                              const std::vector<double>& bias, int stride, int pad, int group = 1) {
  std::int64_t C = x.dims[1], H = x.dims[2], W = x.dims[3], O = wd[0], K = wd[2];
  std::int64_t OH = (H + 2 * pad - K) / stride + 1, OW = (W + 2 * pad - K) / stride + 1, cpg = C / group;
  std::vector<double> y;
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double acc = bias.empty() ? 0 : bias[static_cast<std::size_t>(o)];
        std::int64_t g = o / (O / group);
        for (std::int64_t c = 0; c < cpg; ++c)
          for (std::int64_t kh = 0; kh < K; ++kh)
            for (std::int64_t kw = 0; kw < K; ++kw) {
              std::int64_t ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
              if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
              acc += static_cast<double>(w[static_cast<std::size_t>(((o * cpg + c) * K + kh) * K + kw)]) *
                     x.data[static_cast<std::size_t>(((g * cpg + c) * H + ih) * W + iw)];
            }
        y.push_back(acc);
      }
  return y;
}

const std::vector<float> kW = {0.5f, -0.25f, 0.75f, 1.0f, -0.5f, 0.25f, 0.125f, -1.0f};  // [2,1,2,2]

}  // namespace

TEST_CASE("Conv+BatchNormalization+Relu is one primitive with BN folded into the weights", "[executor]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0}, float[2] b = {0.1, -0.2},
       float[2] s = {2.0, 0.5}, float[2] t = {0.3, -0.1}, float[2] m = {0.05, -0.4}, float[2] v = {0.25, 4.0})
      => (float[1,2,3,3] y) {
      c = Conv (x, w, b)
      n = BatchNormalization <epsilon = 0.001> (c, s, t, m, v)
      y = Relu (n)
    })";
  Tensor x = Ramp({1, 1, 4, 4});
  auto conv = NaiveConv(x, kW, {2, 1, 2, 2}, {0.1, -0.2}, 1, 0);
  const double s[] = {2.0, 0.5}, t[] = {0.3, -0.1}, m[] = {0.05, -0.4}, v[] = {0.25, 4.0};
  for (std::size_t i = 0; i < conv.size(); ++i) {
    std::size_t c = i / 9;
    conv[i] = std::max(0.0, (conv[i] - m[c]) * s[c] / std::sqrt(v[c] + 0.001) + t[c]);
  }
  PlanStats stats = test::CheckBoth(text, {x}, conv).stats;
  CHECK(stats.kernels - stats.reorders == 1);
}

TEST_CASE("a residual Add becomes an in-place sum post-op, strides, pads, groups", "[executor]") {
  // y = Relu(Conv(x, w, stride 2, pad 1, group 2) + Relu(z))
  const char* residual = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x, float[1,2,3,3] z, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0})
      => (float[1,2,3,3] y) {
      zz = Relu (z)
      c = Conv <strides = [2, 2], pads = [1, 1, 1, 1], group = 2> (x, w)
      a = Add (c, zz)
      y = Relu (a)
    })";
  Tensor x = Ramp({1, 2, 4, 4}), z = Ramp({1, 2, 3, 3}, "z");
  for (auto& e : z.data) e -= 0.2f;
  auto conv = NaiveConv(x, kW, {2, 1, 2, 2}, {}, 2, 1, 2);
  for (std::size_t i = 0; i < conv.size(); ++i) conv[i] = std::max(0.0, conv[i] + std::max(0.0f, z.data[i]));
  PlanStats stats = test::CheckBoth(residual, {x, z}, conv).stats;
  CHECK(stats.kernels - stats.reorders == 2);  // Relu(z), then Conv+Add+Relu
}

TEST_CASE("x*Sigmoid(x) is swish, x*HardSigmoid(x) is hardswish, Clip bounds come from Constants", "[executor]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0}) => (float[1,2,3,3] y) {
      c = Conv (x, w)
      sg = Sigmoid (c)
      sw = Mul (c, sg)
      hs = HardSigmoid <alpha = 0.16666667, beta = 0.5> (sw)
      hw = Mul (hs, sw)
      lo = Constant <value = float {-0.1}> ()
      hi = Constant <value = float {0.3}> ()
      y = Clip (hw, lo, hi)
    })";
  Tensor x = Ramp({1, 1, 4, 4});
  for (auto& e : x.data) e *= 4;
  auto y = NaiveConv(x, kW, {2, 1, 2, 2}, {}, 1, 0);
  for (auto& e : y) {
    e = e / (1 + std::exp(-e));
    e = e * std::clamp(e / 6 + 0.5, 0.0, 1.0);
    e = std::clamp(e, -0.1, 0.3);
  }
  PlanStats stats = test::CheckBoth(text, {x}, y).stats;
  CHECK(stats.kernels - stats.reorders == 1);
}

TEST_CASE("squeeze-and-excitation: pooled gate multiplies per channel", "[executor]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, -0.5, 0.25, 2.0}, float[2] b = {0.1, -0.1}) => (float[1,2,3,3] y) {
      p = GlobalAveragePool (x)
      c = Conv (p, w, b)
      s = Sigmoid (c)
      y = Mul (x, s)
    })";
  Tensor x = Ramp({1, 2, 3, 3});
  double mean[2] = {0, 0};
  for (std::size_t i = 0; i < 18; ++i) mean[i / 9] += x.data[i] / 9.0;
  double gate[2] = {1 / (1 + std::exp(-(mean[0] - 0.5 * mean[1] + 0.1))),
                    1 / (1 + std::exp(-(0.25 * mean[0] + 2 * mean[1] - 0.1)))};
  std::vector<double> y;
  for (std::size_t i = 0; i < 18; ++i) y.push_back(x.data[i] * gate[i / 9]);
  test::CheckBoth(text, {x}, y);
}

TEST_CASE("pooling: MaxPool with ceil_mode, AveragePool with and without padding counted", "[executor]") {
  Tensor x = MakeTensor({1, 1, 4, 4}, [](std::int64_t i) { return static_cast<float>(i); });
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,2,2] y) { y = MaxPool <kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1> (x) })",
            {x}, {10, 11, 14, 15});
  // 3x3 windows at stride 2 with pad 1: corners see 4 values (of 9 with padding counted).
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,2,2] y) { y = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x) })",
            {x}, {(0 + 1 + 4 + 5) / 4.0, (1 + 2 + 3 + 5 + 6 + 7) / 6.0, (4 + 5 + 8 + 9 + 12 + 13) / 6.0,
                  (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0});
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,2,2] y) {
      y = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], count_include_pad = 1> (x) })",
            {x}, {10 / 9.0, 24 / 9.0, 51 / 9.0, 90 / 9.0});
}

TEST_CASE("Flatten + Gemm (transB=0, alpha, beta) as one matmul", "[executor]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,1,1] x, float[2,3] w = {1.0, 2.0, 3.0, -1.0, 0.5, 0.0}, float[3] c = {0.5, 0.25, -1.0}) => (float[1,3] y) {
      f = Flatten (x)
      g1 = Gemm <alpha = 2.0, beta = 0.5> (f, w, c)
      y = Relu (g1)
    })";
  Tensor x = MakeTensor({1, 2, 1, 1}, [](std::int64_t i) { return i ? -2.f : 3.f; });
  // 2 * [3, -2] . w + 0.5 c = 2*[5, 5, 9] + [0.25, 0.125, -0.5]
  test::CheckBoth(text, {x}, {10.25, 10.125, 17.5});
}

TEST_CASE("shape subgraphs fold at build time, Reshape, Transpose, MatMul, Softmax, Concat", "[executor]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x, float[2,2] w = {1.0, 0.5, -1.0, 2.0}) => (float[1,2,6] y) {
      sh = Shape (x)
      i0 = Constant <value = int64 {0}> ()
      n = Gather <axis = 0> (sh, i0)
      zero = Constant <value = int64[1] {0}> ()
      nn = Unsqueeze (n, zero)
      rest = Constant <value = int64[2] {3, 2}> ()
      shape = Concat <axis = 0> (nn, rest)
      r = Reshape (x, shape)
      m = MatMul (r, w)
      t = Transpose <perm = [0, 2, 1]> (m)
      s = Softmax (t)
      y = Concat <axis = 2> (s, t)
    })";
  Tensor x = Ramp({1, 2, 3});
  // r = x viewed as [1,3,2]; m = r . w; t = m^T ([1,2,3]); y = [softmax(t, last axis), t]
  std::vector<double> m(6), y;
  for (int i = 0; i < 3; ++i) {
    double a = x.data[static_cast<std::size_t>(2 * i)], b = x.data[static_cast<std::size_t>(2 * i + 1)];
    m[static_cast<std::size_t>(2 * i)] = a * 1.0 + b * -1.0, m[static_cast<std::size_t>(2 * i + 1)] = a * 0.5 + b * 2.0;
  }
  for (int row = 0; row < 2; ++row) {
    double t[3], sum = 0;
    for (int j = 0; j < 3; ++j) t[j] = m[static_cast<std::size_t>(2 * j + row)], sum += std::exp(t[j]);
    for (int j = 0; j < 3; ++j) y.push_back(std::exp(t[j]) / sum);
    for (int j = 0; j < 3; ++j) y.push_back(t[j]);
  }
  test::CheckBoth(text, {x}, y);
}

TEST_CASE("an unsupported op is an error at build time naming the node and op", "[executor]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,2] x) => (float[1,4,2,2] y) {
      y = RandomUniformLike (x)
    })");
  FusionPlan plan = test::FusePostdom(graph);
  try {
    ExecutablePlan::Compile(graph, plan, {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    CHECK_THAT(e.what(), Catch::Contains("node 'RandomUniformLike_0' (RandomUniformLike): operator not supported"));
  }
}

TEST_CASE("the activation arena reuses memory across disjoint lifetimes", "[executor]") {
  // A chain of 6 Relus on 1 MB tensors: at most 2 are alive at a time.
  Graph graph = test::GraphFromText(test::ChainText({"Relu", "Sigmoid", "Relu", "Tanh", "Relu", "Abs"}, "1,4,256,256"));
  test::PlanRun unfused = test::RunPlan(graph, false, {Ramp({1, 4, 256, 256})});
  const std::int64_t mb = 4 * 256 * 256 * 4;
  CHECK(unfused.stats.kernels == 6);
  CHECK(unfused.stats.buffer_bytes_total == 7 * mb);
  CHECK(unfused.stats.arena_bytes <= 3 * mb);
  CHECK(unfused.stats.intermediate_bytes_total == 6 * mb);
}

TEST_CASE("the LayerNormalization and Gelu decompositions run as one primitive each when fused", "[executor]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4] x, float[4] gamma = {1.0, 2.0, 0.5, -1.0}, float[4] beta = {0.0, 0.1, -0.2, 0.3}) => (float[1,2,4] y) {
)" + test::LayerNormText("x", "gamma", "beta", "ln") + test::GeluText("ln", "y", "0.5", "gelu_") + "}";
  Tensor x = Ramp({1, 2, 4});
  std::vector<double> y = test::LayerNormLastAxis(x, {1.0, 2.0, 0.5, -1.0}, {0.0, 0.1, -0.2, 0.3}, 1e-5);
  for (double& n : y) n = 0.5 * n * (1 + std::erf(n / std::sqrt(2.0)));
  PlanStats stats = test::CheckBoth(text, {x}, y, 1e-4).stats;
  CHECK(stats.kernels == 2);
}

TEST_CASE("Pad, Slice, Gather and reductions of run-time tensors", "[executor]") {
  Tensor x = MakeTensor({1, 2, 3}, [](std::int64_t i) { return static_cast<float>(i); });  // [[0 1 2] [3 4 5]]
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x) => (float[1,3,4] y) {
      pads = Constant <value = int64[6] {0, 1, 0, 0, 0, 1}> ()
      v = Constant <value = float {-1.0}> ()
      y = Pad (x, pads, v)
    })",
            {x}, {-1, -1, -1, -1, 0, 1, 2, -1, 3, 4, 5, -1});
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x) => (float[1,2,2] y) {
      s = Constant <value = int64[1] {1}> ()
      e = Constant <value = int64[1] {9}> ()
      a = Constant <value = int64[1] {-1}> ()
      y = Slice (x, s, e, a)
    })",
            {x}, {1, 2, 4, 5});
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x) => (float[1,3] y) {
      i = Constant <value = int64 {1}> ()
      y = Gather <axis = 1> (x, i)
    })",
            {x}, {3, 4, 5});
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x) => (float[1,3] y) {
      axes = Constant <value = int64[1] {1}> ()
      s = ReduceSum <keepdims = 0> (x, axes)
      m = ReduceMax <axes = [1], keepdims = 0> (x)
      y = Add (s, m)
    })",
            {x}, {3 + 3, 5 + 4, 7 + 5});
}

TEST_CASE("channel concat of convolution outputs and transposes as views stay exact", "[executor]") {
  // Two convs write NHWC (or blocked) tensors; the concat joins them along C;
  // the transposes to [N,H,W,C] and back must give the same numbers as plain.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0}) => (float[1,4,3,3] y) {
      a = Conv (x, w)
      b = Conv (x, w)
      c = Concat <axis = 1> (a, b)
      t = Transpose <perm = [0, 2, 3, 1]> (c)
      r = Relu (t)
      y = Transpose <perm = [0, 3, 1, 2]> (r)
    })";
  Tensor x = Ramp({1, 1, 4, 4});
  auto conv = NaiveConv(x, kW, {2, 1, 2, 2}, {}, 1, 0);
  std::vector<double> y = conv;
  y.insert(y.end(), conv.begin(), conv.end());
  for (auto& e : y) e = std::max(0.0, e);
  test::CheckBoth(text, {x}, y);
}
