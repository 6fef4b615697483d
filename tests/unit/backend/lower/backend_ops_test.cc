// The oneDNN backend's lowerings of single ops, on the cases the ONNX node
// tests (tests/conformance) leave out: grouped ConvTranspose with a folded
// BatchNormalization and post-ops, PRelu as a post-op, InstanceNormalization
// (its node tests are opset 6, below the loader's range), Softmax's axis rules,
// variadic Max/Min/Sum/Mean, Split, Clip with run-time bounds, Gemm's transA and
// C shapes, positive Slice steps, Gather with several runs of indices, Winograd
// convolutions, Pow, reductions, Sub and Div with a constant first input, and
// standard-library elementwise ops. Numbers are checked against naive loops in
// double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "onnxfuse/error.h"
#include "onnxfuse/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CompileError;
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

TEST_CASE("PRelu: a prelu primitive, per-channel after a Conv's layout, or broadcast along the last axis", "[backend_ops]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0},
       float[2,1,1] slope = {0.1, -2.0}) => (float[1,2,3,3] y) {
      c = Conv (x, w)
      y = PRelu (c, slope)
    })";
  Tensor x = TensorFrom({1, 1, 4, 4}, Wave);
  const float w[2][4] = {{0.5f, -0.25f, 0.75f, 1.0f}, {-0.5f, 0.25f, 0.125f, -1.0f}}, slope[2] = {0.1f, -2.0f};
  std::vector<double> y;
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 3; ++h)
      for (int v = 0; v < 3; ++v) {
        double acc = 0;
        for (int kh = 0; kh < 2; ++kh)
          for (int kw = 0; kw < 2; ++kw) acc += static_cast<double>(w[o][kh * 2 + kw]) * x.data[static_cast<std::size_t>((h + kh) * 4 + v + kw)];
        y.push_back(acc < 0 ? slope[o] * acc : acc);
      }
  // Not a post-op: oneDNN 2.6 runs convolutions with a prelu post-op on its reference kernel only.
  PlanRun fused = CheckBoth(text, {x}, y);
  CHECK(fused.stats.kernels - fused.stats.reorders == 2);

  // Broadcast along the last axis, slope a run-time input.
  Tensor a = TensorFrom({2, 3}, [](std::int64_t i) { return static_cast<float>(i) - 2.5f; }, "a");
  Tensor s = TensorFrom({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i + 1); }, "s");
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[3] s) => (float[2,3] y) {
      y = PRelu (a, s)
    })",
            {a, s}, {-2.5 * 0.5, -1.5 * 1.0, -0.5 * 1.5, 0.5, 1.5, 2.5});
}

TEST_CASE("InstanceNormalization normalizes each (n, c) over its spatial dims", "[backend_ops]") {
  // After a Conv, so that the fused plan reads a convolution's layout.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,2,3] x, float[3,3,1,1] w = {1, 0, 0, 0, 1, 0, 0, 0, 1}, float[3] s = {1.5, -0.5, 2.0},
       float[3] b = {0.1, 0.2, -0.3}) => (float[2,3,2,3] y) {
      c = Conv (x, w)
      y = InstanceNormalization <epsilon = 0.01> (c, s, b)
    })";
  Tensor x = TensorFrom({2, 3, 2, 3}, Wave);
  const double scale[3] = {1.5, -0.5, 2.0}, shift[3] = {0.1, 0.2, -0.3};
  std::vector<double> y;
  for (int nc = 0; nc < 6; ++nc) {
    double mean = 0, var = 0;
    for (int i = 0; i < 6; ++i) mean += x.data[static_cast<std::size_t>(nc * 6 + i)] / 6.0;
    for (int i = 0; i < 6; ++i) var += std::pow(x.data[static_cast<std::size_t>(nc * 6 + i)] - mean, 2) / 6.0;
    for (int i = 0; i < 6; ++i)
      y.push_back((x.data[static_cast<std::size_t>(nc * 6 + i)] - mean) / std::sqrt(var + 0.01) * scale[nc % 3] + shift[nc % 3]);
  }
  CheckBoth(text, {x}, y, 1e-4);
}

TEST_CASE("a Sub of two scalars keeps rank 0, Log is exact where oneDNN's eltwise_log is not", "[backend_ops]") {
  // Before, the Sub's result took the shape [1] and compiling failed against
  // the inferred [] (ONNX node test test_range_float_type_positive_delta_expanded).
  const char* scalars = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float a, float b) => (float d) {
      d = Sub (a, b)
    })";
  PlanRun run = CheckBoth(scalars, {TensorFrom({}, [](auto) { return 7.5f; }, "a"), TensorFrom({}, [](auto) { return 2.25f; }, "b")},
                          {5.25});
  CHECK(run.outputs[0].dims.empty());
  // oneDNN 2.6's eltwise_log gives log(1) = -1.43e-6 (test_log_example wants
  // 0 within 1e-7): Log runs as std::log, also after a Conv's layout.
  const char* logs = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,2] x, float[2,2,1,1] w = {1, 0, 0, 1}) => (float[1,2,2,2] y) {
      c = Conv (x, w)
      y = Log (c)
    })";
  const std::vector<float> values = {1.0f, 2.718281828f, 0.5f, 3.0f, 1.0f, 0.125f, 10.0f, 1e-3f};
  std::vector<double> expected;
  for (float v : values) expected.push_back(std::log(static_cast<double>(v)));
  CheckBoth(logs, {TensorFrom({1, 2, 2, 2}, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; })}, expected,
            2e-7);
}

TEST_CASE("Softmax and LogSoftmax: over one axis from opset 13, over all trailing axes before", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3, 4}, Wave);
  // y[i] = log(exp(x[i]) / sum over the normalized group of exp(x[j])), the
  // group being `group` consecutive elements of the plain [2, 3, 4] tensor
  // (opset 11, axis 1: 12; opset 13, axis 2: 4).
  auto log_softmax = [&](std::size_t group) {
    std::vector<double> y;
    for (std::size_t g = 0; g < x.data.size(); g += group) {
      double sum = 0;
      for (std::size_t i = g; i < g + group; ++i) sum += std::exp(static_cast<double>(x.data[i]));
      for (std::size_t i = g; i < g + group; ++i) y.push_back(x.data[i] - std::log(sum));
    }
    return y;
  };
  auto exp_of = [](std::vector<double> v) {
    for (double& e : v) e = std::exp(e);
    return v;
  };
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    INFO(op);
    const bool log = std::string(op) == "LogSoftmax";
    const std::string opset11 = std::string(R"(<ir_version: 8, opset_import: ["" : 11]>
      g (float[2,3,4] x) => (float[2,3,4] y) {
        y = )") + op + R"( <axis = 1> (x)
      })";
    CheckBoth(opset11, {x}, log ? log_softmax(12) : exp_of(log_softmax(12)), 1e-5);
    const std::string opset13 = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] x) => (float[2,3,4] y) {
        y = )") + op + R"( (x)
      })";
    CheckBoth(opset13, {x}, log ? log_softmax(4) : exp_of(log_softmax(4)), 1e-5);
  }
}

TEST_CASE("Max, Min, Sum and Mean of broadcast inputs, the full-shaped one not first", "[backend_ops]") {
  Tensor a = TensorFrom({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i) - 0.4f; }, "a");
  Tensor b = TensorFrom({2, 3}, Wave, "b");
  const float c[3] = {0.25f, -0.75f, 0.1f};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    INFO(op);
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[3] a, float[2,3] b, float[1,3] c = {0.25, -0.75, 0.1}) => (float[2,3] y) {
        y = )") + op + R"( (a, b, c)
      })";
    std::vector<double> y;
    for (std::size_t i = 0; i < 6; ++i) {
      const double x0 = a.data[i % 3], x1 = b.data[i], x2 = c[i % 3];
      const std::string o = op;
      y.push_back(o == "Max"   ? std::max({x0, x1, x2})
                  : o == "Min" ? std::min({x0, x1, x2})
                  : o == "Sum" ? x0 + x1 + x2
                               : (x0 + x1 + x2) / 3);
    }
    CheckBoth(text, {a, b}, y, 1e-6);
  }
  const char* single = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] b) => (float[2,3] y) {
      y = Mean (b)
    })";
  const PlanRun one = CheckBoth(single, {b}, std::vector<double>(b.data.begin(), b.data.end()), 0);
  CHECK(one.stats.kernels == 0);  // the input itself, as Identity
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1] a, float[1,3] b) => (float[2,3] y) {
      y = Max (a, b)
    })"), Catch::Matchers::Contains("no run-time input has the output's shape"));
}

TEST_CASE("Split: given sizes after a Conv's layout, equal parts before opset 13, bad sizes refused", "[backend_ops]") {
  Tensor x = TensorFrom({1, 4, 2, 3}, Wave);
  // The identity Conv hands Split a convolution's layout in fused mode.
  const char* sized = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x, float[4,4,1,1] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, int64[2] s = {1, 3})
        => (float[1,3,2,3] b, float[1,1,2,3] a) {
      c = Conv (x, w)
      a, b = Split <axis = 1> (c, s)
    })";
  // The first output is b: channels 1..3 of x.
  CheckBoth(sized, {x}, std::vector<double>(x.data.begin() + 6, x.data.end()), 1e-6);
  const char* equal = R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,4,2,3] x) => (float[1,4,2,1] z, float[1,4,2,2] y) {
      y, z = Split <axis = -1, split = [2, 1]> (x)
    })";
  std::vector<double> last;
  for (std::size_t i = 2; i < x.data.size(); i += 3) last.push_back(x.data[i]);
  CheckBoth(equal, {x}, last, 0);
  const char* halves = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x) => (float[1,2,2,3] q, float[1,2,2,3] p) {
      p, q = Split <axis = 1> (x)
    })";
  CheckBoth(halves, {x}, std::vector<double>(x.data.begin() + 12, x.data.end()), 0);
  // Sizes that do not add up to the axis: refused when loading (shape inference).
  CHECK_THROWS_WITH(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x, int64[2] s = {1, 2}) => (float[1,1,2,3] a, float[1,2,2,3] b) {
      a, b = Split <axis = 1> (x, s)
    })"), Catch::Matchers::Contains("Mismatch between the sum of 'split' (3) and the split dimension of the input (4)"));
}

TEST_CASE("Clip with bounds computed at run time: either bound alone, and min above max", "[backend_ops]") {
  Tensor x = TensorFrom({2, 6}, Wave);
  auto scalar = [](float v, const char* name) { return TensorFrom({}, [v](auto) { return v; }, name); };
  auto clipped = [&](double lo, double hi) {
    std::vector<double> y;
    for (float v : x.data) y.push_back(std::min(std::max(static_cast<double>(v), lo), hi));
    return y;
  };
  const char* both = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float lo, float hi) => (float[2,6] y) {
      y = Clip (x, lo, hi)
    })";
  CheckBoth(both, {x, scalar(-0.3f, "lo"), scalar(0.2f, "hi")}, clipped(-0.3f, 0.2f), 0);
  CheckBoth(both, {x, scalar(0.4f, "lo"), scalar(-0.1f, "hi")}, clipped(0.4f, -0.1f), 0);  // all max
  const char* min_only = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float lo) => (float[2,6] y) {
      y = Clip (x, lo)
    })";
  CheckBoth(min_only, {x, scalar(0.1f, "lo")}, clipped(0.1f, INFINITY), 0);
  const char* max_only = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float hi) => (float[2,6] y) {
      y = Clip (x, , hi)
    })";
  CheckBoth(max_only, {x, scalar(-0.2f, "hi")}, clipped(-INFINITY, -0.2f), 0);
}

TEST_CASE("Gemm with transA = 1 reads A [K, M] as [M, K] in place, with alpha, beta, bias and a Relu", "[backend_ops]") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] a, float[3,4] w = {0.5, -1, 0.25, 2, 1, 0.75, -0.5, 0, -0.25, 1.5, 1, -1},
       float[4] c = {0.1, -0.2, 0.3, -0.4}) => (float[2,4] y) {
      g = Gemm <transA = 1, alpha = 0.5, beta = 2.0> (a, w, c)
      y = Relu (g)
    })";
  Tensor a = TensorFrom({3, 2}, Wave, "a");
  const double w[3][4] = {{0.5, -1, 0.25, 2}, {1, 0.75, -0.5, 0}, {-0.25, 1.5, 1, -1}}, c[4] = {0.1, -0.2, 0.3, -0.4};
  std::vector<double> y;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 4; ++n) {
      double sum = 0;
      for (int k = 0; k < 3; ++k) sum += a.data[static_cast<std::size_t>(k * 2 + m)] * w[k][n];
      y.push_back(std::max(0.0, 0.5 * sum + 2.0 * c[n]));
    }
  CheckBoth(text, {a}, y, 1e-6);
}

TEST_CASE("Gemm's C of shape [M, 1] or [M, N] is added per row, also through a folded BatchNormalization",
          "[backend_ops]") {
  // M = N = 3: a [3, 1] C has one value per output's count of elements but
  // broadcasts along rows, not columns.
  Tensor a = TensorFrom({3, 2}, Wave, "a");
  const double w[2][3] = {{0.5, -1, 0.25}, {2, 1, 0.75}}, column[3] = {1, -2, 3};
  auto product = [&](int m, int n) { return a.data[static_cast<std::size_t>(m * 2)] * w[0][n] + a.data[static_cast<std::size_t>(m * 2 + 1)] * w[1][n]; };
  std::vector<double> y;
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 3; ++n) y.push_back(product(m, n) + 0.5 * column[m]);
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] a, float[2,3] w = {0.5, -1, 0.25, 2, 1, 0.75}, float[3,1] c = {1, -2, 3}) => (float[3,3] y) {
      y = Gemm <beta = 0.5> (a, w, c)
    })",
            {a}, y, 1e-6);
  // A full [M, N] C, then BatchNormalization (scale s, shift t; mean 0, var 1) and Relu.
  const double full[3][3] = {{0.1, 0.2, 0.3}, {-0.4, 0.5, -0.6}, {0.7, -0.8, 0.9}}, s[3] = {2, -1, 0.5}, t[3] = {0.1, 0.2, -0.3};
  y.clear();
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 3; ++n) y.push_back(std::max(0.0, s[n] * (product(m, n) + full[m][n]) / std::sqrt(1 + 1e-5) + t[n]));
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] a, float[2,3] w = {0.5, -1, 0.25, 2, 1, 0.75}, float[3,3] c = {0.1, 0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9},
       float[3] s = {2, -1, 0.5}, float[3] t = {0.1, 0.2, -0.3}, float[3] m = {0, 0, 0}, float[3] v = {1, 1, 1})
        => (float[3,3] y) {
      g = Gemm (a, w, c)
      n = BatchNormalization (g, s, t, m, v)
      y = Relu (n)
    })",
                            {a}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(fused.stats.kernels == 1);
}

TEST_CASE("Slice with steps above 1 and below 0, Gather with several runs of indices", "[backend_ops]") {
  Tensor x = TensorFrom({2, 5, 6}, [](std::int64_t i) { return static_cast<float>(i); });
  auto at = [](std::int64_t a, std::int64_t b, std::int64_t c) { return static_cast<double>(a * 30 + b * 6 + c); };
  std::vector<double> y;  // x[:, 4:0:-2, 1:6:2]
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 4; b > 0; b -= 2)
      for (std::int64_t c = 1; c < 6; c += 2) y.push_back(at(a, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,2,3] y) {
      s = Constant <value = int64[2] {4, 1}> ()
      e = Constant <value = int64[2] {0, 100}> ()
      a = Constant <value = int64[2] {1, -1}> ()
      k = Constant <value = int64[2] {-2, 2}> ()
      y = Slice (x, s, e, a, k)
    })",
            {x}, y);
  y.clear();  // x[1:, ::2, 0:5:3]: positive steps only (one strided reorder)
  for (std::int64_t b = 0; b < 5; b += 2)
    for (std::int64_t c = 0; c < 5; c += 3) y.push_back(at(1, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[1,3,2] y) {
      s = Constant <value = int64[3] {1, 0, 0}> ()
      e = Constant <value = int64[3] {2, 5, 5}> ()
      k = Constant <value = int64[3] {1, 2, 3}> ()
      a = Constant <value = int64[3] {0, 1, 2}> ()
      y = Slice (x, s, e, a, k)
    })",
            {x}, y);

  // Indices [3, 4, 0, -1, 1] along axis 1: runs 3..4, 0, 4 (as -1), 1 -> one reorder each.
  y.clear();
  const std::int64_t idx[] = {3, 4, 0, 4, 1};
  for (std::int64_t a = 0; a < 2; ++a)
    for (auto b : idx)
      for (std::int64_t c = 0; c < 6; ++c) y.push_back(at(a, b, c));
  PlanRun runs = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,5,6] y) {
      i = Constant <value = int64[5] {3, 4, 0, -1, 1}> ()
      y = Gather <axis = 1> (x, i)
    })",
                       {x}, y);
  CHECK(runs.stats.kernels == 4);
  // Twelve scattered indices [2, 3] along the last axis: one copy loop.
  y.clear();
  const std::int64_t scattered[] = {5, 0, 4, 1, 3, 2, 5, 5, 0, 2, 4, 1};
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 5; ++b)
      for (auto c : scattered) y.push_back(at(a, b, c));
  PlanRun loop = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,5,4,3] y) {
      i = Constant <value = int64[4,3] {5, 0, 4, 1, 3, 2, -1, 5, 0, 2, 4, -5}> ()
      y = Gather <axis = 2> (x, i)
    })",
                       {x}, y);
  CHECK(loop.stats.kernels == 1);
  // A scalar negative index drops the axis.
  y.clear();
  for (std::int64_t b = 0; b < 5; ++b)
    for (std::int64_t c = 0; c < 6; ++c) y.push_back(at(1, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[5,6] y) {
      i = Constant <value = int64 {-1}> ()
      y = Gather (x, i)
    })",
            {x}, y);
}

TEST_CASE("a 3x3 convolution between wide layers runs as Winograd F(2x2, 3x3) unless a Concat reads it",
          "[backend_ops]") {
  // Read by a Conv, the 64 -> 64 3x3 conv takes oneDNN's Winograd kernel (on
  // AVX-512, where it exists); read by a Concat with a channels-last branch,
  // it stays direct (its blocked layout would make the concat plain).
  std::vector<float> w1 = Floats(64 * 64 * 9, 0.05f, 1), w2 = Floats(16 * 64, 0.2f, 2), b1 = Floats(64, 0.3f, 3);
  auto model = [&](bool concat) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,64,12,12] x, float[64,64,3,3] w1 = )" + test::FloatList(w1) + R"(, float[64] b1 = )" + test::FloatList(b1) +
           R"(, float[16,64,1,1] w2 = )" + test::FloatList(w2) + R"() => (float[1,)" + (concat ? "80" : "16") + R"(,12,12] y) {
        c = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
        r = Relu (c)
        )" + (concat ? "side = Conv (x, w2)\n        y = Concat <axis = 1> (r, side)" : "y = Conv (r, w2)") + R"(
      })";
  };
  Tensor x = TensorFrom({1, 64, 12, 12}, Wave);
  for (bool concat : {false, true}) {
    INFO((concat ? "read by a Concat" : "read by a Conv"));
    Graph graph = test::GraphFromText(model(concat));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-4);
    INFO(test::StepList(fused));
    const bool avx512 = test::StepsContaining(fused, "avx512") > 0;
    CHECK(test::StepsContaining(fused, "wino") == (!concat && avx512 ? 1 : 0));
  }
}

TEST_CASE("Pow with a constant exponent of several values, broadcast along the last axis", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
  const double p[3] = {2, 0.5, -1.5};
  std::vector<double> y;
  for (std::size_t i = 0; i < 6; ++i) y.push_back(std::pow(static_cast<double>(x.data[i]), p[i % 3]));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] p = {2, 0.5, -1.5}) => (float[2,3] y) {
      y = Pow (x, p)
    })",
            {x}, y, 1e-6);
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] p) => (float[2,3] y) {
      y = Pow (x, p)
    })"),
             Catch::Matchers::Contains("input 'p' must be a constant known at build time"));
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, float[2,3] p = {1, 2, 3, 4, 5, 6}) => (float[2,3] y) {
      y = Pow (x, p)
    })"),
             Catch::Matchers::Contains("broadcasts X to a larger shape"));
}

TEST_CASE("ReduceSum with no axes: all of them, or none with noop_with_empty_axes", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, Wave);
  double total = 0;
  for (float v : x.data) total += v;
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[1,1] y) {
      y = ReduceSum (x)
    })",
            {x}, {total}, 1e-6);
  PlanRun noop = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      y = ReduceSum <noop_with_empty_axes = 1> (x)
    })",
                           {x}, std::vector<double>(x.data.begin(), x.data.end()), 0);
  CHECK(noop.stats.kernels == 0);
}

TEST_CASE("Sub and Div whose first input is a constant or a broadcast tensor: operands swapped, result negated or inverted",
          "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
  Tensor a = TensorFrom({3}, [](std::int64_t i) { return 1.f - static_cast<float>(i); }, "a");
  std::vector<double> y;
  for (std::size_t i = 0; i < 6; ++i) y.push_back(std::max(0.0, 1.0 - x.data[i]));
  PlanRun sub = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float one = {1.0}) => (float[2,3] y) {
      d = Sub (one, x)
      y = Relu (d)
    })",
                          {x}, y, 1e-6);
  CHECK(sub.stats.kernels == 1);  // the negation and the Relu are post-ops of the one binary step
  y.clear();
  for (std::size_t i = 0; i < 6; ++i) y.push_back(a.data[i % 3] / x.data[i]);
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] a) => (float[2,3] y) {
      y = Div (a, x)
    })",
            {x, a}, y, 1e-6);
}

TEST_CASE("ReduceLogSum and ReduceLogSumExp: a sum reduction with a log post-op, after an exp step for the latter",
          "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.3f * static_cast<float>(i); });
  std::vector<double> log_sum, log_sum_exp;
  for (std::size_t r = 0; r < 2; ++r) {
    double s = 0, e = 0;
    for (std::size_t c = 0; c < 3; ++c) s += x.data[r * 3 + c], e += std::exp(static_cast<double>(x.data[r * 3 + c]));
    log_sum.push_back(std::log(s)), log_sum_exp.push_back(std::log(e));
  }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2] y) {
      y = ReduceLogSum <axes = [1], keepdims = 0> (x)
    })",
            {x}, log_sum, 1e-5);
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,1] y) {
      y = ReduceLogSumExp <axes = [-1]> (x)
    })",
                            {x}, log_sum_exp, 1e-5);
  CHECK(fused.stats.kernels == 2);
}

TEST_CASE("standard-library elementwise ops: Round halves to even, Selu and ThresholdedRelu take their attributes",
          "[backend_ops]") {
  Tensor x = TensorFrom({1, 8}, [](std::int64_t i) { return -2.5f + 0.75f * static_cast<float>(i); });  // -2.5 .. 2.75
  std::vector<double> y;
  for (float v : x.data) y.push_back(std::nearbyint(v));
  CHECK(y.front() == -2.0);  // -2.5 rounds to the even -2, not -3
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      y = Round (x)
    })",
            {x}, y, 0);
  y.clear();
  for (float v : x.data) {
    const double selu = 1.5 * (v > 0 ? v : 2.0 * (std::exp(static_cast<double>(v)) - 1));
    y.push_back(selu > 0.8 ? selu : 0.0);
  }
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      s = Selu <alpha = 2.0, gamma = 1.5> (x)
      y = ThresholdedRelu <alpha = 0.8> (s)
    })",
                            {x}, y, 1e-6);
  CHECK(test::StepsStartingWith(fused, "selu ") == 1);
  CHECK(test::StepsStartingWith(fused, "thresholded_relu ") == 1);
}

TEST_CASE("SpaceToDepth then DepthToSpace (DCR) give the input back, one reorder each", "[backend_ops]") {
  Tensor x = TensorFrom({1, 3, 4, 6}, [](std::int64_t i) { return static_cast<float>(i); });
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6] x) => (float[1,3,4,6] y) {
      s = SpaceToDepth <blocksize = 2> (x)
      y = DepthToSpace <blocksize = 2, mode = "DCR"> (s)
    })",
                            {x}, std::vector<double>(x.data.begin(), x.data.end()), 0);
  CHECK(fused.stats.kernels == 2);
  // SpaceToDepth's channel c' = (b1 * 2 + b2) * 3 + c holds x[c][2h + b1][2w + b2].
  Tensor s = test::RunPlan(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6] x) => (float[1,12,2,3] s) {
      s = SpaceToDepth <blocksize = 2> (x)
    })"), true, {x}).outputs.at(0);
  CHECK(s.data[static_cast<std::size_t>(((1 * 2 + 0) * 3 + 2) * 6 + 1 * 3 + 2)] == x.data[2 * 24 + 3 * 6 + 4]);
}
