// ConvTranspose chains (src/backend/lower/ops/deconv.cc): a grouped deconvolution with
// output_padding taking a folded BatchNormalization and Relu. Numbers are
// checked against a naive scatter loop in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("grouped ConvTranspose with output_padding, folded BatchNormalization and Relu is one deconvolution",
          "[backend_ops]") {
  // X [1,4,3,3], W [4,2,3,3] (C_in 4, group 2 -> C_out 4), strides 2, pads 1, output_padding 1:
  // out = 2*(3-1) + 1 + 3 - 1 - 1 = 6.
  const std::int64_t cin = 4, cout_g = 2, group = 2, k = 3, in = 3, stride = 2, pad = 1, out = 6;
  std::vector<float> w = Floats(static_cast<std::size_t>(cin * cout_g * k * k), 0.5f, 1), bias = {0.1f, -0.2f, 0.3f, 0.05f};
  std::vector<float> gamma = {1.5f, 0.5f, -1.0f, 2.0f}, beta = {0.1f, 0.0f, -0.3f, 0.2f}, mean = {0.2f, -0.1f, 0.0f, 0.3f},
                     var = {0.5f, 2.0f, 1.0f, 0.25f};
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,3,3] x, float[4,2,3,3] w = )" + test::FloatList(w) + R"(, float[4] b = )" + test::FloatList(bias) +
                     R"(, float[4] s = )" + test::FloatList(gamma) + R"(, float[4] t = )" + test::FloatList(beta) + R"(, float[4] m = )" +
                     test::FloatList(mean) + R"(, float[4] v = )" + test::FloatList(var) + R"() => (float[1,4,6,6] y) {
      c = ConvTranspose <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (x, w, b)
      n = BatchNormalization <epsilon = 0.001> (c, s, t, m, v)
      y = Relu (n)
    })";
  Tensor x = TensorFrom({1, cin, in, in}, Wave);
  const std::int64_t cin_g = cin / group, cout = cout_g * group;
  std::vector<double> y(static_cast<std::size_t>(cout * out * out));
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t i = 0; i < out * out; ++i) y[static_cast<std::size_t>(o * out * out + i)] = bias[static_cast<std::size_t>(o)];
  for (std::int64_t ci = 0; ci < cin; ++ci)  // scatter every input pixel through the kernel
    for (std::int64_t oc = 0; oc < cout_g; ++oc)
      for (std::int64_t ih = 0; ih < in; ++ih)
        for (std::int64_t iw = 0; iw < in; ++iw)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              std::int64_t oh = ih * stride - pad + kh, ow = iw * stride - pad + kw, o = ci / cin_g * cout_g + oc;
              if (oh < 0 || ow < 0 || oh >= out || ow >= out) continue;
              y[static_cast<std::size_t>((o * out + oh) * out + ow)] +=
                  static_cast<double>(x.data[static_cast<std::size_t>((ci * in + ih) * in + iw)]) *
                  w[static_cast<std::size_t>(((ci * cout_g + oc) * k + kh) * k + kw)];
            }
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t i = 0; i < out * out; ++i) {
      auto c = static_cast<std::size_t>(o);
      double& e = y[static_cast<std::size_t>(o * out * out + i)];
      e = std::max(0.0, (e - mean[c]) / std::sqrt(static_cast<double>(var[c]) + 1e-3) * gamma[c] + beta[c]);
    }
  PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
  CHECK(fused.stats.kernels <= 3);  // one deconvolution, at most a reorder on each side
  INFO(test::StepList(fused));
  CHECK(test::StepsContaining(fused, "+BatchNormalization+Relu") > 0);
  CHECK(fused.stats.kernels - fused.stats.reorders == 1);
}

TEST_CASE("a grouped ConvTranspose whose weights and bias are graph inputs reorders them at run time", "[backend_ops]") {
  // X [1,4,3,3], W [4,2,2,2] (group 2 -> C_out 4), strides 2: out = 2*(3-1) + 2 = 6.
  const std::int64_t cin = 4, cout_g = 2, group = 2, k = 2, in = 3, stride = 2, out = 6;
  const Tensor x = TensorFrom({1, cin, in, in}, Wave, "x");
  const Tensor w = TensorFrom({cin, cout_g, k, k}, [](std::int64_t i) { return 0.5f * Wave(5 * i + 2); }, "w");
  const Tensor bias = TensorFrom({4}, [](std::int64_t i) { return 0.3f - 0.2f * static_cast<float>(i); }, "b");
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,3,3] x, float[4,2,2,2] w, float[4] b) => (float[1,4,6,6] y) {
      c = ConvTranspose <group = 2, strides = [2, 2]> (x, w, b)
      y = Relu (c)
    })";
  const std::int64_t cin_g = cin / group, cout = cout_g * group;
  std::vector<double> y(static_cast<std::size_t>(cout * out * out));
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t i = 0; i < out * out; ++i)
      y[static_cast<std::size_t>(o * out * out + i)] = bias.data[static_cast<std::size_t>(o)];
  for (std::int64_t ci = 0; ci < cin; ++ci)  // scatter every input pixel through the kernel
    for (std::int64_t oc = 0; oc < cout_g; ++oc)
      for (std::int64_t ih = 0; ih < in; ++ih)
        for (std::int64_t iw = 0; iw < in; ++iw)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t oh = ih * stride + kh, ow = iw * stride + kw, o = ci / cin_g * cout_g + oc;
              y[static_cast<std::size_t>((o * out + oh) * out + ow)] +=
                  static_cast<double>(x.data[static_cast<std::size_t>((ci * in + ih) * in + iw)]) *
                  w.data[static_cast<std::size_t>(((ci * cout_g + oc) * k + kh) * k + kw)];
            }
  for (double& v : y) v = std::max(0.0, v);
  const PlanRun fused = CheckBoth(text, {x, w, bias}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "deconv ConvTranspose_0+Relu ") == 1);
}

TEST_CASE("a 1x1 ConvTranspose with pads or a stride runs on oneDNN's gemm kernel, which is not a slow step",
          "[backend_ops]") {
  // oneDNN 2.6 has no jit deconvolution for a 1x1 kernel with padding or a
  // stride; its gemm one is one GEMM and a col2im (IsSlowPrimitive).
  // y[n, o, 2i - 1, 2j - 1] = sum_c w[c, o] x[n, c, i, j] + b[o]; b elsewhere.
  const Tensor x = TensorFrom({1, 3, 4, 4}, [](std::int64_t i) { return Wave(5 * i); });
  const double w[3][2] = {{0.5, -1.0}, {0.25, 2.0}, {-0.75, 1.5}}, bias[2] = {0.1, -0.2};
  std::vector<double> y;
  for (int o = 0; o < 2; ++o)
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 5; ++c) {
        double v = bias[o];
        if ((r + 1) % 2 == 0 && (c + 1) % 2 == 0)
          for (int k = 0; k < 3; ++k) v += w[k][o] * x.data[static_cast<std::size_t>((k * 4 + (r + 1) / 2) * 4 + (c + 1) / 2)];
        y.push_back(v);
      }
  const PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,4] x, float[3,2,1,1] w = {0.5, -1.0, 0.25, 2.0, -0.75, 1.5}, float[2] b = {0.1, -0.2})
      => (float[1,2,5,5] y) {
      y = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
    })",
                                  {x}, y, 1e-6);
  INFO(test::StepList(fused));
  CHECK(test::StepsContaining(fused, "gemm") == 1);
  CHECK(test::SlowSteps(fused) == 0);
}
