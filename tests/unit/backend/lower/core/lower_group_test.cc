// Our own activation kernels (src/backend/kernels/activation.h) as the lowering
// uses them (src/backend/lower/core/lower_group.cc, Flush): swish after a convolution,
// swish with the means a GlobalAveragePool takes in the same pass, and Gelu
// after a MatMul + Add. Tagged [activation]: ctest also runs them with oneDNN's
// ISA capped at AVX2 and SSE4.1 (tests/CMakeLists.txt). Numbers are checked
// against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

// x [1, C, H, W] -> a 1x1 Conv by w [K, C, 1, 1] with bias b [K] -> c * Sigmoid(c):
// nodes Conv_0, Sigmoid_1 and Mul_2, the last writing `out`; then the nodes of
// `rest`, which end in y [1, K, H, W].
std::string ConvSwishModel(const Tensor& x, const std::vector<float>& w, const std::vector<float>& bias,
                           const std::string& out, const std::string& rest) {
  const std::string k = std::to_string(bias.size()), c = std::to_string(x.dims[1]);
  const std::string hw = std::to_string(x.dims[2]) + "," + std::to_string(x.dims[3]);
  return R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,)" + c + "," + hw + "] x, float[" + k + "," + c + ",1,1] w = " + test::FloatList(w) + ", float[" + k +
         "] b = " + test::FloatList(bias) + ") => (float[1," + k + "," + hw + R"(] y) {
      c = Conv (x, w, b)
      s = Sigmoid (c)
      )" + out + " = Mul (c, s)\n" + rest + "}";
}

// The reference of ConvSwishModel's `out` in double: swish(c) = c / (1 + e^-c)
// of c[o, p] = b[o] + sum_i w[o, i] x[i, p], p a pixel; [K, H*W] flat. The c
// go to `conv` when it is given.
std::vector<double> ConvSwish(const Tensor& x, const std::vector<float>& w, const std::vector<float>& bias,
                              std::vector<double>* conv = nullptr) {
  const std::int64_t cin = x.dims[1], hw = x.dims[2] * x.dims[3], cout = static_cast<std::int64_t>(bias.size());
  std::vector<double> y;
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t p = 0; p < hw; ++p) {
      double c = bias[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < cin; ++i)
        c += static_cast<double>(w[static_cast<std::size_t>(o * cin + i)]) * x.data[static_cast<std::size_t>(i * hw + p)];
      y.push_back(c / (1 + std::exp(-c)));
      if (conv) conv->push_back(c);
    }
  return y;
}

}  // namespace

TEST_CASE("Conv -> x * Sigmoid(x) runs the convolution, then the swish kernel in place", "[backend_ops][activation]") {
  // Convolution outputs beyond +-50 (exp(-x) huge and tiny), 105
  // elements (not a multiple of any vector width: the tail path too).
  std::vector<float> w = {40.f, -25.f, -60.f, 35.f, 3.f, -2.f}, bias = {0.5f, -1.f, 0.f};
  Tensor x = TensorFrom({1, 2, 5, 7}, [](std::int64_t i) { return static_cast<float>(i % 23) / 11.f - 1.f; });
  const std::string text = ConvSwishModel(x, w, bias, "y", "");
  std::vector<double> conv;
  const std::vector<double> y = ConvSwish(x, w, bias, &conv);
  double lowest = 0, highest = 0;
  for (double c : conv) lowest = std::min(lowest, c), highest = std::max(highest, c);
  CHECK(lowest < -50);  // swish(x) ~ x e^x, a tiny negative value
  CHECK(highest > 50);  // swish(x) ~ x
  PlanRun fused = CheckBoth(text, {x}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "swish Sigmoid_1+Mul_2 onnxfuse:custom") > 0);
  CHECK(test::StepsContaining(fused, "Conv_0+Sigmoid") == 0);  // not a post-op of the conv
}

TEST_CASE("swish followed by a GlobalAveragePool: the means are taken in the swish kernel's pass",
          "[backend_ops][activation]") {
  // Squeeze-and-excitation's start: y = swish(conv(x)) * mean over the pixels
  // of swish(conv(x)). 40 channels (not a multiple of a vector width), 24x24
  // pixels: several chunks of rows, shared by the threads.
  const std::int64_t cin = 8, cout = 40, hw = 24 * 24;
  std::vector<float> w = Floats(cout * cin, 0.7f, 1), bias = Floats(cout, 0.5f, 2);
  Tensor x = TensorFrom({1, cin, 24, 24}, Wave);
  const std::string text = ConvSwishModel(x, w, bias, "a", "      m = GlobalAveragePool (a)\n      y = Mul (a, m)\n");
  const std::vector<double> a = ConvSwish(x, w, bias);
  std::vector<double> y;
  for (std::int64_t o = 0; o < cout; ++o) {
    double mean = 0;
    for (std::int64_t p = 0; p < hw; ++p) mean += a[static_cast<std::size_t>(o * hw + p)];
    mean /= static_cast<double>(hw);
    for (std::int64_t p = 0; p < hw; ++p) y.push_back(a[static_cast<std::size_t>(o * hw + p)] * mean);
  }
  PlanRun fused = CheckBoth(text, {x}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "pool") == 0);
  CHECK(test::StepsStartingWith(fused, "swish Sigmoid_1+Mul_2+GlobalAveragePool_3 onnxfuse:custom") == 1);
}

TEST_CASE("the Gelu decomposition runs as our Gelu kernel, after a MatMul + Add", "[backend_ops][activation]") {
  // 1 x 37 x 27 outputs (999: a vector tail) spread over about [-12, 12]:
  // erf saturates at both ends, Gelu(x) ~ 0 below and ~ x above.
  const std::int64_t rows = 37, k = 3, n = 27;
  std::vector<float> w, bias;
  for (std::int64_t i = 0; i < k * n; ++i) w.push_back(static_cast<float>((i * 5) % 9 - 4) * 1.5f);
  for (std::int64_t i = 0; i < n; ++i) bias.push_back(static_cast<float>(i % 5) * 0.25f - 0.5f);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,37,3] x, float[3,27] w = )" + test::FloatList(w) + R"(, float[27] b = )" + test::FloatList(bias) + R"() => (float[1,37,27] y) {
      m = MatMul (x, w)
      h = Add (m, b)
)" + test::GeluText("h", "y", "0.5", "gelu_") + "}";
  Tensor x = TensorFrom({1, rows, k}, [](std::int64_t i) { return static_cast<float>(i % 17) / 8.f - 1.f; });
  std::vector<double> y;
  double lowest = 0, highest = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      double h = bias[static_cast<std::size_t>(c)];
      for (std::int64_t i = 0; i < k; ++i)
        h += static_cast<double>(x.data[static_cast<std::size_t>(r * k + i)]) * w[static_cast<std::size_t>(i * n + c)];
      y.push_back(0.5 * h * (1 + std::erf(h / std::sqrt(2.0))));
      lowest = std::min(lowest, h), highest = std::max(highest, h);
    }
  CHECK(lowest < -10);
  CHECK(highest > 10);
  // Our Gelu kernel's error is absolute: below 3e-7 |h| (activation.h).
  PlanRun fused = CheckBoth(text, {x}, y, 1e-5, 3e-7 * std::max(-lowest, highest));
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "gelu Div_3+Gelu onnxfuse:custom") > 0);
}
