// The oneDNN backend's ConvTranspose, PRelu, InstanceNormalization, Resize,
// Slice and Gather lowerings, on the cases the ONNX node tests
// (tests/conformance) leave out: grouped ConvTranspose with a folded
// BatchNormalization and post-ops, PRelu as a post-op, InstanceNormalization
// (its node tests are opset 6, below the loader's range), positive Slice steps,
// Gather with several runs of indices, Resize after a convolution's blocked
// layout, Resize modes oneDNN lacks (cubic, align_corners, tf_crop_and_resize,
// the channel axis) and refused Resizes. Numbers are checked against naive
// loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "onnxfuse/error.h"
#include "onnxfuse/executor.h"
#include "onnxfuse/postdom_fuser.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CheckClose;
using test::PlanRun;

namespace {

using Dims = std::vector<std::int64_t>;

Tensor Make(Dims dims, const std::function<float(std::int64_t)>& f, std::string name = "x") {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.data.push_back(f(i));
  return t;
}

float Wave(std::int64_t i) { return static_cast<float>((i * 7) % 11 - 5) * 0.125f + 0.03f * static_cast<float>(i % 4); }

// The 1x1 convolutions of x [n, cin, h, w] by w[i] [couts[i], cin],
// concatenated along channels: [n, sum couts, h, w], in double.
std::vector<double> ConcatenatedPointwise(const Tensor& x, const std::vector<std::vector<float>>& w,
                                          const std::vector<std::int64_t>& couts) {
  const std::int64_t n = x.dims[0], cin = x.dims[1], hw = x.dims[2] * x.dims[3];
  std::vector<double> y;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < couts.size(); ++i)
      for (std::int64_t o = 0; o < couts[i]; ++o)
        for (std::int64_t p = 0; p < hw; ++p) {
          double sum = 0;
          for (std::int64_t ci = 0; ci < cin; ++ci)
            sum += static_cast<double>(w[i][static_cast<std::size_t>(o * cin + ci)]) *
                   x.data[static_cast<std::size_t>((b * cin + ci) * hw + p)];
          y.push_back(sum);
        }
  return y;
}

std::vector<float> Floats(std::size_t n, float scale, int salt) {
  std::vector<float> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(scale * Wave(static_cast<std::int64_t>(i) * 3 + salt));
  return v;
}

std::string CompileError(const std::string& text) {
  Graph graph = test::GraphFromText(text);
  try {
    ExecutablePlan::Compile(graph, FuseByPostDominator(graph, {}), {});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    return e.what();
  }
  FAIL("compiled without an error");
  return "";
}

}  // namespace

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
  Tensor x = Make({1, cin, in, in}, Wave);
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
  Tensor x = Make({1, 1, 4, 4}, Wave);
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
  Tensor a = Make({2, 3}, [](std::int64_t i) { return static_cast<float>(i) - 2.5f; }, "a");
  Tensor s = Make({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i + 1); }, "s");
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
  Tensor x = Make({2, 3, 2, 3}, Wave);
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

TEST_CASE("a Sub of two scalars keeps rank 0; Log is exact where oneDNN's eltwise_log is not", "[backend_ops]") {
  // Before, the Sub's result took the shape [1] and compiling failed against
  // the inferred [] (ONNX node test test_range_float_type_positive_delta_expanded).
  const char* scalars = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float a, float b) => (float d) {
      d = Sub (a, b)
    })";
  PlanRun run = CheckBoth(scalars, {Make({}, [](auto) { return 7.5f; }, "a"), Make({}, [](auto) { return 2.25f; }, "b")},
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
  CheckBoth(logs, {Make({1, 2, 2, 2}, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; })}, expected,
            2e-7);
}

TEST_CASE("Softmax and LogSoftmax: over one axis from opset 13, over all trailing axes before", "[backend_ops]") {
  Tensor x = Make({2, 3, 4}, Wave);
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
  Tensor a = Make({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i) - 0.4f; }, "a");
  Tensor b = Make({2, 3}, Wave, "b");
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
  Tensor x = Make({1, 4, 2, 3}, Wave);
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
  Tensor x = Make({2, 6}, Wave);
  auto scalar = [](float v, const char* name) { return Make({}, [v](auto) { return v; }, name); };
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
  Tensor a = Make({3, 2}, Wave, "a");
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
  Tensor a = Make({3, 2}, Wave, "a");
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

TEST_CASE("Slice with steps above 1 and below 0; Gather with several runs of indices", "[backend_ops]") {
  Tensor x = Make({2, 5, 6}, [](std::int64_t i) { return static_cast<float>(i); });
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

TEST_CASE("Resize on oneDNN: integer nearest upsampling after a Conv; linear half_pixel", "[backend_ops]") {
  // PyTorch's nn.Upsample(scale_factor=2) exports asymmetric + floor: for an
  // integer factor the same input indices as oneDNN's half_pixel rounding.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2,2,1,1] w = {1, 0, 0, 1}) => (float[1,2,6,9] y) {
      c = Conv (x, w)
      s = Constant <value = float[4] {1, 1, 2, 3}> ()
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (c, , s)
    })";
  Tensor x = Make({1, 2, 3, 3}, Wave);
  std::vector<double> y;
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 6; ++h)
      for (int v = 0; v < 9; ++v) y.push_back(x.data[static_cast<std::size_t>(c * 9 + h / 2 * 3 + v / 3)]);
  CheckBoth(text, {x}, y);

  // Linear, half_pixel, sizes: x = (o + 0.5) * 2 / 3 - 0.5 along W, clamped at the edges.
  Tensor r = Make({1, 1, 1, 2}, [](std::int64_t i) { return i ? 4.f : 1.f; }, "r");
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,2] r) => (float[1,1,1,3] y) {
      z = Constant <value = int64[4] {1, 1, 1, 3}> ()
      y = Resize <mode = "linear"> (r, , , z)
    })",
            {r}, {1.0, 2.5, 4.0});
  CHECK(StepsStartingWith(run, "resampling ") == 1);
}

namespace {

// Keys' cubic convolution kernel (IEEE TASSP 1981) at distance d, A = -0.75.
double Keys(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

}  // namespace

TEST_CASE("Resize on our own loops: cubic after a blocked Conv, align_corners, channel axis, extrapolation",
          "[backend_ops]") {
  // Cubic, half_pixel, 2x upsampling of a Conv's output (blocked or
  // channels-last, made plain first): every output is the 2-D sum of the 4x4
  // clamped neighbours weighted by Keys' kernel at their distances.
  const std::int64_t c = 16, h = 3, w = 4;
  std::vector<float> identity(static_cast<std::size_t>(c * c), 0.0f);
  for (std::int64_t i = 0; i < c; ++i) identity[static_cast<std::size_t>(i * c + i)] = 1.0f;
  Tensor x = Make({1, c, h, w}, Wave);
  std::vector<double> cubic;
  auto at = [&](std::int64_t ch, std::int64_t i, std::int64_t j) {
    i = std::clamp<std::int64_t>(i, 0, h - 1), j = std::clamp<std::int64_t>(j, 0, w - 1);
    return static_cast<double>(x.data[static_cast<std::size_t>((ch * h + i) * w + j)]);
  };
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (int oy = 0; oy < 2 * h; ++oy)
      for (int ox = 0; ox < 2 * w; ++ox) {
        const double sy = (oy + 0.5) / 2 - 0.5, sx = (ox + 0.5) / 2 - 0.5;
        const auto fy = static_cast<std::int64_t>(std::floor(sy)), fx = static_cast<std::int64_t>(std::floor(sx));
        double sum = 0;
        for (std::int64_t i = fy - 1; i <= fy + 2; ++i)
          for (std::int64_t j = fx - 1; j <= fx + 2; ++j)
            sum += Keys(sy - static_cast<double>(i)) * Keys(sx - static_cast<double>(j)) * at(ch, i, j);
        cubic.push_back(sum);
      }
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,16,3,4] x, float[16,16,1,1] w = )" + test::FloatList(identity) + R"() => (float[1,16,6,8] y) {
      c = Conv (x, w)
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Resize <mode = "cubic"> (c, , s)
    })",
                          {x}, cubic);
  CHECK(StepsStartingWith(run, "resize ") == 1);

  // Linear, align_corners, 2x2 -> 3x4: x = o * (in - 1) / (out - 1).
  Tensor q = Make({1, 1, 2, 2}, [](std::int64_t i) { return static_cast<float>(i * i + 1); }, "q");  // 1 2 / 5 10
  std::vector<double> corners;
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 4; ++ox) {
      const double sy = oy / 2.0, sx = ox / 3.0;
      corners.push_back((1 - sy) * ((1 - sx) * 1 + sx * 2) + sy * ((1 - sx) * 5 + sx * 10));
    }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] q) => (float[1,1,3,4] y) {
      z = Constant <value = int64[4] {1, 1, 3, 4}> ()
      y = Resize <mode = "linear", coordinate_transformation_mode = "align_corners"> (q, , , z)
    })",
            {q}, corners);

  // Nearest (asymmetric, floor) on three axes at once, the channel axis
  // among them: [1,2,2,3] -> [1,3,3,5], three passes through two scratch buffers.
  Tensor n = Make({1, 2, 2, 3}, [](std::int64_t i) { return static_cast<float>(i); }, "n");
  std::vector<double> nearest;
  for (int oc = 0; oc < 3; ++oc)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 5; ++ox)
        nearest.push_back(static_cast<double>((oc * 2 / 3) * 6 + (oy * 2 / 3) * 3 + ox * 3 / 5));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,3] n) => (float[1,3,3,5] y) {
      z = Constant <value = int64[4] {1, 3, 3, 5}> ()
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (n, , , z)
    })",
            {n}, nearest);

  // tf_crop_and_resize: the crop [0.5, 1.5] of a 1-D row of 3 reaches past its
  // end; those outputs are extrapolation_value.
  Tensor e = Make({1, 1, 1, 3}, [](std::int64_t i) { return static_cast<float>(10 * (i + 1)); }, "e");  // 10 20 30
  // x = 0.5 * 2 + o * 1.0 * 2 / 4: 1, 1.5, 2, 2.5 (out), 3 (out).
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,3] e) => (float[1,1,1,5] y) {
      roi = Constant <value = float[8] {0, 0, 0, 0.5, 1, 1, 1, 1.5}> ()
      z = Constant <value = int64[4] {1, 1, 1, 5}> ()
      y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = -7.0> (e, roi, , z)
    })",
            {e}, {20.0, 25.0, 30.0, -7.0, -7.0});
}

TEST_CASE("Resize: modes and inputs it cannot take are refused at build time", "[backend_ops]") {
  std::string error = CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] x) => (float[1,1,4,4] y) {
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Resize <mode = "area"> (x, , s)
    })");
  CHECK_THAT(error, Catch::Contains("Resize") && Catch::Contains("mode 'area'"));
  error = CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,2] x, float[4] s) => (float[1,1,4,4] y) {
      y = Resize <mode = "linear"> (x, , s)
    })");
  CHECK_THAT(error, Catch::Contains("Resize"));
}

TEST_CASE("Concat -> BatchNormalization (-> Relu) of convolutions' outputs is one pass", "[backend_ops]") {
  // Three 1x1 convolutions of x [2,4,3,3], concatenated and normalized. Their
  // outputs are channels-last (AVX-512) or nChw8c (AVX2). Channels 16, 3, 32:
  // offsets 0, 16, 19, not all multiples of a block, so the result is
  // channels-last. Channels 16, 8, 24: offsets 0, 16, 24; blocked parts then
  // give a blocked result, the layout the parts have.
  const std::int64_t n = 2, cin = 4, hw = 9;
  Tensor x = Make({n, cin, 3, 3}, Wave);
  for (const std::vector<std::int64_t>& couts : {std::vector<std::int64_t>{16, 3, 32}, std::vector<std::int64_t>{16, 8, 24}}) {
    const std::int64_t total = couts[0] + couts[1] + couts[2];
    const bool aligned = couts[1] == 8;
    std::vector<std::vector<float>> w;
    for (std::size_t i = 0; i < couts.size(); ++i)
      w.push_back(Floats(static_cast<std::size_t>(couts[i] * cin), 0.5f, static_cast<int>(i) + 1));
    std::vector<float> gamma = Floats(static_cast<std::size_t>(total), 1.0f, 7),
                       beta = Floats(static_cast<std::size_t>(total), 0.5f, 8),
                       mean = Floats(static_cast<std::size_t>(total), 0.3f, 9), var;
    for (std::int64_t c = 0; c < total; ++c) var.push_back(0.25f + 0.05f * static_cast<float>(c % 7));
    auto d = [](std::int64_t v) { return std::to_string(v); };
    for (bool relu : {true, false}) {
      INFO((relu ? "with Relu" : "without Relu") << ", parts of " << couts[0] << ", " << couts[1] << ", " << couts[2]);
      std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[2,4,3,3] x, float[)" + d(couts[0]) + R"(,4,1,1] w0 = )" + test::FloatList(w[0]) + R"(, float[)" + d(couts[1]) +
                         R"(,4,1,1] w1 = )" + test::FloatList(w[1]) + R"(, float[)" + d(couts[2]) + R"(,4,1,1] w2 = )" + test::FloatList(w[2]) +
                         R"(, float[)" + d(total) + "] s = " + test::FloatList(gamma) + R"(, float[)" + d(total) + "] t = " +
                         test::FloatList(beta) + R"(, float[)" + d(total) + "] m = " + test::FloatList(mean) + R"(, float[)" + d(total) +
                         "] v = " + test::FloatList(var) + R"() => (float[2,)" + d(total) + R"(,3,3] y) {
          a = Conv (x, w0)
          b = Conv (x, w1)
          c = Conv (x, w2)
          cat = Concat <axis = 1> (a, b, c)
          )" + (relu ? "n = BatchNormalization <epsilon = 0.001> (cat, s, t, m, v)\n          y = Relu (n)"
                     : "y = BatchNormalization <epsilon = 0.001> (cat, s, t, m, v)") + R"(
        })";
      std::vector<double> y = ConcatenatedPointwise(x, w, couts);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const auto c = static_cast<std::size_t>(static_cast<std::int64_t>(i) / hw % total);
        const double e = (y[i] - mean[c]) / std::sqrt(static_cast<double>(var[c]) + 1e-3) * gamma[c] + beta[c];
        y[i] = relu ? std::max(0.0, e) : e;
      }
      PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
      INFO(test::StepList(fused));
      const std::string step = relu ? "concat_batch_norm Concat_3+BatchNormalization_4+Relu_5 onnxfuse:custom "
                                    : "concat_batch_norm Concat_3+BatchNormalization_4 onnxfuse:custom ";
      const bool blocked_parts = test::StepsStartingWith(fused, "conv Conv_2 ") == 1 &&
                                 test::StepsContaining(fused, "Conv_2 jit_1x1:avx2 aBcd8b") == 1;
      CHECK(test::StepsStartingWith(fused, step) == 1);
      CHECK(test::StepsStartingWith(fused, step + (aligned && blocked_parts ? "aBcd8b" : "acdb")) == 1);
      CHECK(test::StepsStartingWith(fused, "concat ") == 0);
      CHECK(test::StepsStartingWith(fused, "batch_norm ") == 0);
    }
  }
}

TEST_CASE("a Concat whose parts are whole runs of its result is copied run by run", "[backend_ops]") {
  // Plain parts along axis 1 of [2, C, 4]: per image, runs of 12, 20 and 4
  // floats. Then three 1x1 convolutions of x [2,4,3,3] with 16, 8 and 24
  // output channels: nChw8c on AVX2, where each part is a whole number of
  // 8-channel blocks and each image of the result is the three parts one
  // after another.
  {
    Tensor p = Make({2, 3, 4}, Wave, "p"), q = Make({2, 5, 4}, [](std::int64_t i) { return Wave(i + 5); }, "q"),
           r = Make({2, 1, 4}, [](std::int64_t i) { return Wave(i + 9); }, "r");
    const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] p, float[2,5,4] q, float[2,1,4] r) => (float[2,9,4] y) {
        y = Concat <axis = 1> (p, q, r)
      })";
    std::vector<double> y;
    for (std::int64_t n = 0; n < 2; ++n)
      for (const Tensor* t : {&p, &q, &r})
        for (std::int64_t i = 0; i < t->dims[1] * 4; ++i) y.push_back(t->data[static_cast<std::size_t>(n * t->dims[1] * 4 + i)]);
    PlanRun fused = CheckBoth(text, {p, q, r}, y, 0);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "concat Concat_0 onnxfuse:concat_copy ") == 1);
  }
  const std::int64_t n = 2, cin = 4;
  const std::vector<std::int64_t> couts = {16, 8, 24};
  Tensor x = Make({n, cin, 3, 3}, Wave);
  std::vector<std::vector<float>> w;
  for (std::size_t i = 0; i < couts.size(); ++i)
    w.push_back(Floats(static_cast<std::size_t>(couts[i] * cin), 0.5f, static_cast<int>(i) + 1));
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4,3,3] x, float[16,4,1,1] w0 = )" + test::FloatList(w[0]) + R"(, float[8,4,1,1] w1 = )" + test::FloatList(w[1]) +
                           R"(, float[24,4,1,1] w2 = )" + test::FloatList(w[2]) + R"() => (float[2,48,3,3] y) {
      a = Conv (x, w0)
      b = Conv (x, w1)
      c = Conv (x, w2)
      y = Concat <axis = 1> (a, b, c)
    })";
  PlanRun fused = CheckBoth(text, {x}, ConcatenatedPointwise(x, w, couts), 1e-5);
  INFO(test::StepList(fused));
  const bool blocked_parts = test::StepsContaining(fused, "Conv_2 jit_1x1:avx2 aBcd8b") == 1;
  CHECK(test::StepsStartingWith(fused, "concat Concat_3 onnxfuse:concat_copy aBcd8b") == (blocked_parts ? 1 : 0));
}

TEST_CASE("a planar three-channel image reaches a channels-last first Conv through our own reorder",
          "[backend_ops][activation]") {
  // Two images of 70x70 pixels: 4900 per plane, more than one block of 4096
  // for the threads and not a multiple of 16 (the scalar tail). On AVX-512
  // the first Conv reads channels-last and the reorder to it is
  // layout_kernels.h's; on AVX2 the Conv reads the planes itself. 32 output
  // channels: with 16 the Conv would read the planes on AVX-512 too (the
  // next test).
  std::vector<float> w = Floats(32 * 3 * 9, 0.3f, 1), bias = Floats(32, 0.2f, 2);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,70,70] x, float[32,3,3,3] w = )" + test::FloatList(w) + R"(, float[32] b = )" + test::FloatList(bias) +
                           R"() => (float[2,32,35,35] y) {
      c = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w, b)
      y = Relu (c)
    })";
  Graph graph = test::GraphFromText(text);
  Tensor x = Make({2, 3, 70, 70}, Wave);
  PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
  INFO(test::StepList(fused));
  const bool avx512 = test::StepsContaining(fused, "avx512") > 0;
  CHECK(test::StepsStartingWith(fused, "reorder Conv_0 onnxfuse:custom acdb") == (avx512 ? 1 : 0));
}

TEST_CASE("a first Conv to 16 channels reads the planar image; its nChw16c result is channels-last for its readers",
          "[backend_ops]") {
  // 3 -> 16 channels at 20x20 (MobileNetV3's stem), then a depthwise 3x3 and
  // a 1x1 to 24. On AVX-512 the first conv reads
  // NCHW and writes nChw16c, the same bytes as NHWC for 16 channels: the
  // depthwise conv (channels-last) reads them with no reorder between.
  std::vector<float> w0 = Floats(16 * 3 * 9, 0.3f, 1), w1 = Floats(16 * 9, 0.4f, 2), w2 = Floats(24 * 16, 0.3f, 3);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,20,20] x, float[16,3,3,3] w0 = )" + test::FloatList(w0) + R"(, float[16,1,3,3] w1 = )" + test::FloatList(w1) +
                           R"(, float[24,16,1,1] w2 = )" + test::FloatList(w2) + R"() => (float[1,24,20,20] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w0)
      r = Relu (a)
      d = Conv <pads = [1, 1, 1, 1], group = 16> (r, w1)
      y = Conv (d, w2)
    })";
  Graph graph = test::GraphFromText(text);
  PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Make({1, 3, 20, 20}, Wave)}, 1e-5);
  INFO(test::StepList(fused));
  if (test::StepsContaining(fused, "avx512") > 0) {
    CHECK(test::StepsStartingWith(fused, "conv Conv_0+Relu jit:avx512_core aBcd16b") == 1);
    CHECK(test::StepsStartingWith(fused, "reorder Conv_") == 0);  // only the output's, to plain
  }
}

TEST_CASE("Conv -> x * Sigmoid(x) runs the convolution, then the swish kernel in place", "[backend_ops][activation]") {
  // Convolution outputs beyond +-50 (exp(-x) huge and tiny), 105
  // elements (not a multiple of any vector width: the tail path too).
  const std::int64_t cin = 2, cout = 3, hw = 35;
  std::vector<float> w = {40.f, -25.f, -60.f, 35.f, 3.f, -2.f}, bias = {0.5f, -1.f, 0.f};
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,7] x, float[3,2,1,1] w = )" + test::FloatList(w) + R"(, float[3] b = )" + test::FloatList(bias) +
                           R"() => (float[1,3,5,7] y) {
      c = Conv (x, w, b)
      s = Sigmoid (c)
      y = Mul (c, s)
    })";
  Tensor x = Make({1, cin, 5, 7}, [](std::int64_t i) { return static_cast<float>(i % 23) / 11.f - 1.f; });
  std::vector<double> y;
  double lowest = 0, highest = 0;
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t p = 0; p < hw; ++p) {
      double c = bias[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < cin; ++i)
        c += static_cast<double>(w[static_cast<std::size_t>(o * cin + i)]) * x.data[static_cast<std::size_t>(i * hw + p)];
      y.push_back(c / (1 + std::exp(-c)));
      lowest = std::min(lowest, c), highest = std::max(highest, c);
    }
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
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,24,24] x, float[40,8,1,1] w = )" + test::FloatList(w) + R"(, float[40] b = )" + test::FloatList(bias) +
                           R"() => (float[1,40,24,24] y) {
      c = Conv (x, w, b)
      s = Sigmoid (c)
      a = Mul (c, s)
      m = GlobalAveragePool (a)
      y = Mul (a, m)
    })";
  Tensor x = Make({1, cin, 24, 24}, Wave);
  std::vector<double> a(static_cast<std::size_t>(cout * hw)), y;
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t p = 0; p < hw; ++p) {
      double c = bias[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < cin; ++i)
        c += static_cast<double>(w[static_cast<std::size_t>(o * cin + i)]) * x.data[static_cast<std::size_t>(i * hw + p)];
      a[static_cast<std::size_t>(o * hw + p)] = c / (1 + std::exp(-c));
    }
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
      r2 = Constant <value = float {1.4142135}> ()
      q = Div (h, r2)
      e = Erf (q)
      one = Constant <value = float {1.0}> ()
      e1 = Add (e, one)
      p = Mul (h, e1)
      half = Constant <value = float {0.5}> ()
      y = Mul (p, half)
    })";
  Tensor x = Make({1, rows, k}, [](std::int64_t i) { return static_cast<float>(i % 17) / 8.f - 1.f; });
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
  PlanRun fused = CheckBoth(text, {x}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "gelu Div_3+Gelu onnxfuse:custom") > 0);
}

TEST_CASE("a Concat read only by convolutions is never copied: each reader runs per part and accumulates",
          "[backend_ops]") {
  // SqueezeNet's fire module: two convolutions (1x1 and 3x3) of a squeeze
  // output, concatenated, read by the next 1x1 conv (+ Relu). With a residual
  // Add after the reader (a `sum` post-op already), the concat is made after all.
  std::vector<float> ws = Floats(8 * 4, 0.4f, 1), we1 = Floats(16 * 8, 0.3f, 2), we3 = Floats(24 * 8 * 9, 0.2f, 3),
                     wn = Floats(12 * 40, 0.25f, 4), bn = Floats(12, 0.5f, 5), wr = Floats(12 * 4, 0.3f, 6);
  auto model = [&](bool residual) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4,9,9] x, float[8,4,1,1] ws = )" + test::FloatList(ws) + R"(, float[16,8,1,1] we1 = )" + test::FloatList(we1) +
           R"(, float[24,8,3,3] we3 = )" + test::FloatList(we3) + R"(, float[12,40,1,1] wn = )" + test::FloatList(wn) +
           R"(, float[12] bn = )" + test::FloatList(bn) + R"(, float[12,4,1,1] wr = )" + test::FloatList(wr) + R"() => (float[1,12,9,9] y) {
        sq = Conv (x, ws)
        s = Relu (sq)
        e1 = Conv (s, we1)
        r1 = Relu (e1)
        e3 = Conv <pads = [1, 1, 1, 1]> (s, we3)
        r3 = Relu (e3)
        cat = Concat <axis = 1> (r1, r3)
        n = Conv (cat, wn, bn)
        )" + (residual ? "side = Conv (x, wr)\n        y = Add (n, side)" : "y = Relu (n)") + R"(
      })";
  };
  Tensor x = Make({1, 4, 9, 9}, Wave);
  for (bool residual : {false, true}) {
    INFO((residual ? "reader with a residual Add" : "reader with a Relu"));
    Graph graph = test::GraphFromText(model(residual));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsContaining(fused, "(Concat_6 part ") == (residual ? 0 : 2));
    CHECK(test::StepsStartingWith(fused, "concat ") == (residual ? 1 : 0));
  }
}

TEST_CASE("squeeze-and-excitation: the excitation is one step and the gate x * s scales the next Conv's weights",
          "[backend_ops]") {
  // x (a 3x3 conv's output, in the conv's layout) -> GlobalAveragePool -> 1x1
  // conv -> Relu or swish -> 1x1 conv -> Sigmoid or HardSigmoid = s (one
  // squeeze_excite step); x * s -> 1x1 projection conv with 24 outputs (not a
  // multiple of oneDNN's 16-channel weight blocks: padding). At 10x10, x (1600
  // elements) outweighs the projection's weights (384): the product is never
  // made. At 3x3 (144 elements) it is a binary primitive as before.
  std::vector<float> wx = Floats(16 * 4 * 9, 0.2f, 1), w1 = Floats(4 * 16, 0.5f, 2), w2 = Floats(16 * 4, 0.6f, 3),
                     b2 = Floats(16, 0.4f, 4), wp = Floats(24 * 16, 0.3f, 5), bp = Floats(24, 0.5f, 6);
  auto model = [&](int side, bool mobilenet_v3) {
    const std::string s = std::to_string(side);
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4,)" + s + "," + s + R"(] x0, float[16,4,3,3] wx = )" + test::FloatList(wx) + R"(, float[4,16,1,1] w1 = )" +
           test::FloatList(w1) + R"(, float[16,4,1,1] w2 = )" + test::FloatList(w2) + R"(, float[16] b2 = )" + test::FloatList(b2) +
           R"(, float[24,16,1,1] wp = )" + test::FloatList(wp) + R"(, float[24] bp = )" + test::FloatList(bp) + R"() => (float[1,24,)" + s +
           "," + s + R"(] y) {
        x = Conv <pads = [1, 1, 1, 1]> (x0, wx)
        pooled = GlobalAveragePool (x)
        f1 = Conv (pooled, w1)
        )" + (mobilenet_v3 ? "r1 = Relu (f1)" : "g1 = Sigmoid (f1)\n        r1 = Mul (f1, g1)") + R"(
        f2 = Conv (r1, w2, b2)
        gate = )" + (mobilenet_v3 ? "HardSigmoid <alpha = 0.25, beta = 0.4> (f2)" : "Sigmoid (f2)") + R"(
        scaled = Mul (x, gate)
        y = Conv (scaled, wp, bp)
      })";
  };
  for (int side : {10, 3})
    for (bool mobilenet_v3 : {false, true}) {
      INFO("spatial " << side << "x" << side << (mobilenet_v3 ? ", Relu and HardSigmoid" : ", swish and Sigmoid"));
      Graph graph = test::GraphFromText(model(side, mobilenet_v3));
      Tensor x0 = Make({1, 4, side, side}, Wave, "x0");
      PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x0}, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsStartingWith(fused, "squeeze_excite ") == 1);
      CHECK(test::StepsStartingWith(fused, "conv ") == 2);  // the 3x3 and the projection
      CHECK(test::StepsStartingWith(fused, "channel_scale ") == (side == 10 ? 1 : 0));
      CHECK(test::StepsStartingWith(fused, "binary ") == (side == 10 ? 0 : 1));
    }
}

TEST_CASE("x * s with per-channel s on a channel-blocked x runs a jit binary, never oneDNN's reference one",
          "[backend_ops]") {
  // A 3x3 conv's output x (fused: nChw16c with AVX-512, nChw8c with AVX2)
  // times its channel means s [1, C, 1, 1] (a GlobalAveragePool, in x's
  // layout), read by no convolution: a binary step. oneDNN 2.6 on AVX2 has a
  // jit binary for an nChw8c src0 only when s is blocked the same way; with s
  // plain it fell back to ref:any (7 ms instead of 0.05 on EfficientNet-B0's
  // 1152-channel blocks). C = 20 and 32: padded to the block, and not. The
  // same with a constant s, when x is also a graph output (so the Mul is no
  // post-op of the conv): s is then blocked at build time.
  for (bool constant : {false, true})
    for (std::int64_t channels : {20, 32}) {
      INFO(channels << " channels, s " << (constant ? "constant" : "computed"));
      const std::string c = std::to_string(channels);
      std::vector<float> w = Floats(static_cast<std::size_t>(channels * 4 * 9), 0.2f, 7),
                         scale = Floats(static_cast<std::size_t>(channels), 0.5f, 8);
      Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[1,4,6,6] x0, float[)" + c + R"(,4,3,3] w = )" + test::FloatList(w) + R"(, float[1,)" + c + R"(,1,1] s = )" +
                                        test::FloatList(scale) + R"() => (float[1,)" + c + R"(,6,6] y, float[1,)" + c +
                                        R"(,6,6] x) {
          x = Conv <pads = [1, 1, 1, 1]> (x0, w)
          )" + (constant ? "y = Mul (x, s)" : "means = GlobalAveragePool (x)\n          y = Mul (x, means)") + R"(
        })");
      PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Make({1, 4, 6, 6}, Wave, "x0")}, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsStartingWith(fused, "binary ") == 1);
      CHECK(test::StepsContaining(fused, "ref:") == 0);
    }
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
  Tensor x = Make({1, 64, 12, 12}, Wave);
  for (bool concat : {false, true}) {
    INFO((concat ? "read by a Concat" : "read by a Conv"));
    Graph graph = test::GraphFromText(model(concat));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-4);
    INFO(test::StepList(fused));
    const bool avx512 = test::StepsContaining(fused, "avx512") > 0;
    CHECK(test::StepsContaining(fused, "wino") == (!concat && avx512 ? 1 : 0));
  }
}

TEST_CASE("a Concat read by a MaxPool is pooled per part; the pooled parts feed the next Conv unconcatenated",
          "[backend_ops]") {
  // SqueezeNet between stages: fire module -> Concat -> MaxPool (3x3, stride
  // 2, ceil_mode) -> squeeze conv. With a Flatten reading the pool instead,
  // the pooled parts are concatenated (smaller than the unpooled concat).
  std::vector<float> ws = Floats(8 * 4, 0.4f, 1), we1 = Floats(16 * 8, 0.3f, 2), we3 = Floats(24 * 8 * 9, 0.2f, 3),
                     wn = Floats(12 * 40, 0.25f, 4);
  auto model = [&](bool conv_reads_pool) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4,9,9] x, float[8,4,1,1] ws = )" + test::FloatList(ws) + R"(, float[16,8,1,1] we1 = )" + test::FloatList(we1) +
           R"(, float[24,8,3,3] we3 = )" + test::FloatList(we3) + R"(, float[12,40,1,1] wn = )" + test::FloatList(wn) + R"() => (float[1,)" +
           (conv_reads_pool ? "12,4,4" : "640") + R"(] y) {
        sq = Conv (x, ws)
        s = Relu (sq)
        e1 = Conv (s, we1)
        r1 = Relu (e1)
        e3 = Conv <pads = [1, 1, 1, 1]> (s, we3)
        r3 = Relu (e3)
        cat = Concat <axis = 1> (r1, r3)
        p = MaxPool <kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1> (cat)
        )" + (conv_reads_pool ? "n = Conv (p, wn)\n        y = Relu (n)" : "y = Flatten (p)") + R"(
      })";
  };
  Tensor x = Make({1, 4, 9, 9}, Wave);
  for (bool conv_reads_pool : {true, false}) {
    INFO((conv_reads_pool ? "a Conv reads the pool" : "a Flatten reads the pool"));
    Graph graph = test::GraphFromText(model(conv_reads_pool));
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "pooling MaxPool_7 (Concat_6 part ") == 2);
    CHECK(test::StepsContaining(fused, "(Concat_6+MaxPool_7 part ") == (conv_reads_pool ? 2 : 0));  // conv steps
    CHECK(test::StepsStartingWith(fused, "concat ") == (conv_reads_pool ? 0 : 1));
  }
}

TEST_CASE("attention's Q / sqrt(d) scales the Q K^T MatMul's result, which reads both transposed views in place",
          "[backend_ops]") {
  // ViT's attention: q and k [tokens, heads, d] transposed to [heads, tokens, d]
  // and [heads, d, tokens]; q / 2 (a constant scalar) feeds only the MatMul:
  // (q / 2) k^T = (q k^T) / 2, no pass over q. The product of two run-time
  // operands may run on gemm, which reads the transposed views without copies.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5,2,4] q, float[5,2,4] k, float[1] two = {2.0}) => (float[2,5,5] y) {
      qt = Transpose <perm = [1, 0, 2]> (q)
      qs = Div (qt, two)
      kt = Transpose <perm = [1, 2, 0]> (k)
      y = MatMul (qs, kt)
    })";
  Tensor q = Make({5, 2, 4}, Wave, "q"), k = Make({5, 2, 4}, [](std::int64_t i) { return Wave(i * 3 + 1); }, "k");
  std::vector<double> y;
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        double sum = 0;
        for (std::int64_t d = 0; d < 4; ++d)
          sum += static_cast<double>(q.data[static_cast<std::size_t>((i * 2 + h) * 4 + d)]) / 2 *
                 k.data[static_cast<std::size_t>((j * 2 + h) * 4 + d)];
        y.push_back(sum);
      }
  PlanRun fused = CheckBoth(text, {q, k}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "binary ") == 0);
  CHECK(test::StepsStartingWith(fused, "reorder ") == 0);
  CHECK(test::StepsStartingWith(fused, "matmul ") == 1);
}

TEST_CASE("fused, Slice, Split and a Gather of one run are views: attention's Q and K slices reach the MatMul uncopied",
          "[backend_ops][views]") {
  // ViT's in-projection result qkv [tokens, 1, 3 * E] is sliced into Q, K and
  // V along its last axis; each is reshaped to [tokens, heads, d] and
  // transposed. The slices are strided views (rows 3 * E apart) that the
  // MatMul reads in place: no slice, no reorder.
  const std::int64_t tokens = 5, heads = 2, d = 4, e = heads * d;
  Tensor qkv = Make({tokens, 1, 3 * e}, Wave, "qkv");
  auto at = [&](std::int64_t t, std::int64_t part, std::int64_t h, std::int64_t i) {
    return static_cast<double>(qkv.data[static_cast<std::size_t>(t * 3 * e + part * e + h * d + i)]);
  };
  std::vector<double> y;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < tokens; ++i)
      for (std::int64_t j = 0; j < tokens; ++j) {
        double sum = 0;
        for (std::int64_t k = 0; k < d; ++k) sum += at(i, 0, h, k) * at(j, 1, h, k);
        y.push_back(sum);
      }
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5,1,24] qkv) => (float[2,5,5] y) {
      axis = Constant <value = int64[1] {-1}> ()
      s0 = Constant <value = int64[1] {0}> ()
      s1 = Constant <value = int64[1] {8}> ()
      s2 = Constant <value = int64[1] {16}> ()
      shape = Constant <value = int64[3] {5, 2, 4}> ()
      q = Slice (qkv, s0, s1, axis)
      k = Slice (qkv, s1, s2, axis)
      q3 = Reshape (q, shape)
      k3 = Reshape (k, shape)
      qt = Transpose <perm = [1, 0, 2]> (q3)
      kt = Transpose <perm = [1, 2, 0]> (k3)
      y = MatMul (qt, kt)
    })",
                            {qkv}, y);
  INFO(test::StepList(fused));
  CHECK(fused.stats.kernels == 1);
  CHECK(test::StepsStartingWith(fused, "matmul ") == 1);

  // Split along the outer axis: each part is a plain view at its offset; a
  // Relu reads part b in place and the Add reads both. A part that is a graph
  // output is copied out of the shared buffer.
  Tensor x = Make({2, 3, 4}, Wave);
  const std::string split = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,4] x) => (float[1,3,4] y, float[1,3,4] b) {
      a, b = Split <axis = 0> (x)
      r = Relu (b)
      y = Add (r, a)
    })";
  std::vector<double> sum, second(x.data.begin() + 12, x.data.end());
  for (std::size_t i = 0; i < 12; ++i) sum.push_back(std::max(0.f, x.data[i + 12]) + x.data[i]);
  PlanRun parts = CheckBoth(split, {x}, sum, 1e-6);
  INFO(test::StepList(parts));
  CheckClose(parts.outputs.at(1), second, 0);
  CHECK(test::StepsStartingWith(parts, "split ") == 0);
  CHECK(test::StepsStartingWith(parts, "reorder ") == 0);

  // A Gather of one index (ViT's class token x[:, 0]) is a view too; the Gemm reads it.
  Tensor tokens_in = Make({1, 5, 6}, Wave);
  std::vector<float> w = Floats(18, 0.5f, 2);
  std::vector<double> cls;
  for (std::int64_t j = 0; j < 3; ++j) {
    double s = 0;
    for (std::int64_t c = 0; c < 6; ++c) s += static_cast<double>(tokens_in.data[static_cast<std::size_t>(c)]) * w[static_cast<std::size_t>(c * 3 + j)];
    cls.push_back(s);
  }
  PlanRun gathered = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,5,6] x, float[6,3] w = )" + test::FloatList(w) + R"() => (float[1,3] y) {
      i = Constant <value = int64 {0}> ()
      c = Gather <axis = 1> (x, i)
      y = MatMul (c, w)
    })",
                               {tokens_in}, cls);
  INFO(test::StepList(gathered));
  CHECK(gathered.stats.kernels == 1);
}

TEST_CASE("a buffer a view still reads is not overwritten in place by a sum post-op", "[backend_ops][views]") {
  // s views c's buffer (the odd columns) and is a graph output; the second
  // Conv, of x, takes c (in the convolutions' layout) as the sum addend of its
  // residual Add. Writing that Conv's result over c would change s: the addend
  // is copied instead.
  Tensor x = Make({1, 2, 2, 4}, Wave);
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,4] x, float[2,2,1,1] w0 = {1, 0.5, -0.5, 1}, float[2,2,1,1] w = {0.5, -1, 2, 0.25})
        => (float[1,2,2,2] s, float[1,2,2,4] y) {
      u = Conv (x, w0)
      c = Relu (u)
      st = Constant <value = int64[1] {1}> ()
      en = Constant <value = int64[1] {4}> ()
      ax = Constant <value = int64[1] {3}> ()
      k = Constant <value = int64[1] {2}> ()
      s = Slice (c, st, en, ax, k)
      v = Conv (x, w)
      y = Add (v, c)
    })";
  const double w0[2][2] = {{1, 0.5}, {-0.5, 1}}, w[2][2] = {{0.5, -1}, {2, 0.25}};
  std::vector<double> c, s, y;
  for (std::size_t o = 0; o < 2; ++o)
    for (std::size_t p = 0; p < 8; ++p) c.push_back(std::max(0.0, w0[o][0] * x.data[p] + w0[o][1] * x.data[8 + p]));
  for (std::size_t i = 1; i < c.size(); i += 2) s.push_back(c[i]);
  for (std::size_t o = 0; o < 2; ++o)
    for (std::size_t p = 0; p < 8; ++p) y.push_back(w[o][0] * x.data[p] + w[o][1] * x.data[8 + p] + c[o * 8 + p]);
  PlanRun fused = CheckBoth(text, {x}, s, 1e-6);
  INFO(test::StepList(fused));
  CheckClose(fused.outputs.at(1), y, 1e-6);
  CHECK(test::StepsStartingWith(fused, "slice ") == 0);
}

TEST_CASE("fused, an elementwise op or Add writes over its source when nothing reads that later", "[backend_ops][in_place]") {
  // x [1, 2, 4, 4] (128 bytes); p, q its 2x2 max and average pools (32 bytes each).
  Tensor x = Make({1, 2, 4, 4}, Wave);
  std::vector<double> p, q;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j) {
        double high = -1e9, sum = 0;
        for (std::int64_t di = 0; di < 2; ++di)
          for (std::int64_t dj = 0; dj < 2; ++dj) {
            const double v = x.data[static_cast<std::size_t>(c * 16 + (2 * i + di) * 4 + 2 * j + dj)];
            high = std::max(high, v), sum += v;
          }
        p.push_back(high), q.push_back(sum / 4);
      }
  auto bytes = [](const std::string& text, const std::vector<Tensor>& inputs, bool fuse) {
    return test::RunPlan(test::GraphFromText(text), fuse, inputs).stats.buffer_bytes_total;
  };
  // A Relu after a pooling (no chain to join) runs in place over the pooled values.
  const std::string relu = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] y) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      y = Relu (p)
    })";
  std::vector<double> y;
  for (double v : p) y.push_back(std::max(0.0, v));
  CheckBoth(relu, {x}, y, 1e-6);
  CHECK(bytes(relu, {x}, true) == 128 + 32);
  CHECK(bytes(relu, {x}, false) == 128 + 32 + 32);
  // The Add writes over p; q is read by the Add itself.
  const std::string add = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] s) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      q = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      s = Add (p, q)
    })";
  std::vector<double> s;
  for (std::size_t i = 0; i < p.size(); ++i) s.push_back(p[i] + q[i]);
  CheckBoth(add, {x}, s, 1e-6);
  CHECK(bytes(add, {x}, true) == 128 + 32 + 32);
  // p is also a graph output: it keeps its values, the sum gets its own buffer.
  const std::string kept = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] s, float[1,2,2,2] p) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      q = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      s = Add (p, q)
    })";
  PlanRun both = CheckBoth(kept, {x}, s, 1e-6);
  CheckClose(both.outputs.at(1), p, 0);
  CHECK(both.stats.buffer_bytes_total == 128 + 32 + 32 + 32);
}

TEST_CASE("0-size tensors: Split, Slice and views pass them on; any other reader is refused at build time",
          "[backend_ops]") {
  Tensor empty = Make({0, 3}, Wave);
  const std::string parts = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[0,3] x) => (float[0,1] a, float[0,2] b) {
      s = Constant <value = int64[2] {1, 2}> ()
      a, b = Split <axis = 1> (x, s)
    })";
  for (bool fuse : {false, true}) {
    test::PlanRun run = test::RunPlan(test::GraphFromText(parts), fuse, {empty});
    CHECK(run.outputs.at(0).dims == Dims{0, 1});
    CHECK(run.outputs.at(1).dims == Dims{0, 2});
    CHECK(run.outputs.at(1).data.empty());
  }
  // An empty Slice read by a MatMul (its kernel would see a zero dim; it divided by it before).
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,3] x, float[3,2] w = {1, 2, 3, 4, 5, 6}) => (float[0,2] y) {
      s = Constant <value = int64[1] {2}> ()
      e = Constant <value = int64[1] {2}> ()
      t = Slice (x, s, e)
      y = MatMul (t, w)
    })"),
             Catch::Matchers::Contains("node 'MatMul_3' (MatMul): input 't' has no elements (shape [0,3])"));
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[0,3] x) => (float[0,3] y) {
      y = Relu (x)
    })"),
             Catch::Matchers::Contains("0-size tensors are not supported here"));
}

TEST_CASE("Pow with a constant exponent of several values, broadcast along the last axis", "[backend_ops]") {
  Tensor x = Make({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
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
  Tensor x = Make({2, 3}, Wave);
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
  Tensor x = Make({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
  Tensor a = Make({3}, [](std::int64_t i) { return 1.f - static_cast<float>(i); }, "a");
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
  Tensor x = Make({2, 3}, [](std::int64_t i) { return 0.5f + 0.3f * static_cast<float>(i); });
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
  Tensor x = Make({1, 8}, [](std::int64_t i) { return -2.5f + 0.75f * static_cast<float>(i); });  // -2.5 .. 2.75
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
  Tensor x = Make({1, 3, 4, 6}, [](std::int64_t i) { return static_cast<float>(i); });
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

TEST_CASE("GlobalAveragePool after a Conv runs our own kernel in the Conv's layout: two images, padded channels",
          "[backend_ops]") {
  // A 1x1 Conv of x [2,4,side,side], then GlobalAveragePool, against a double
  // loop. 20 channels at 9x9: blocked, padded to the block (or, reading a
  // channels-last input, channels-last: 20 lanes, not a vector multiple); 81
  // pixels, not a multiple of the four rows summed at once. 64 channels at
  // 32x32: 8 blocks of 1024 pixels, enough for the sums to be split over the
  // OpenMP threads.
  struct Case {
    std::int64_t c, side;
  };
  for (const Case& k : {Case{20, 9}, Case{64, 32}}) {
    const std::int64_t images = 2, cin = 4, c = k.c, side = k.side, pixels = side * side;
    const std::vector<float> w = Floats(static_cast<std::size_t>(c * cin), 0.5f, 11);
    Tensor x = Make({images, cin, side, side}, Wave);
    const std::vector<double> conv = test::NaivePointwise(x, w, c);
    std::vector<double> y;
    for (std::int64_t plane = 0; plane < images * c; ++plane) {
      double sum = 0;
      for (std::int64_t p = 0; p < pixels; ++p) sum += conv[static_cast<std::size_t>(plane * pixels + p)];
      y.push_back(sum / static_cast<double>(pixels));
    }
    const std::string hw = std::to_string(side) + "," + std::to_string(side), ch = std::to_string(c);
    for (bool channels_last_input : {false, true}) {
      INFO(ch << " channels at " << hw << (channels_last_input ? ", channels-last input" : ", planar input"));
      const Tensor input = channels_last_input ? test::ChannelsLast(x, "xt") : x;
      // Channels-last: x given as [2, side, side, 4], read through a Transpose.
      const std::string read = channels_last_input ? "t = Transpose <perm = [0, 3, 1, 2]> (xt)\n          c = Conv (t, w)"
                                                   : "c = Conv (x, w)";
      const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[)" + (channels_last_input ? "2," + hw + ",4] xt" : "2,4," + hw + "] x") + ", float[" + ch +
                               ",4,1,1] w = " + test::FloatList(w) + ") => (float[2," + ch + R"(,1,1] y) {
          )" + read + R"(
          y = GlobalAveragePool (c)
        })";
      PlanRun fused = CheckBoth(text, {input}, y, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsContaining(fused, "onnxfuse:global_average_pool") == 1);
    }
  }
}

TEST_CASE("MaxPool after a Conv runs our own kernel in the Conv's layout: pads, strides, ceil_mode, padded channels",
          "[backend_ops]") {
  // A 1x1 Conv of x [1,4,9,9] to 20 channels (blocked: padded to the block;
  // or, reading a channels-last input, channels-last: 20 lanes, not a vector
  // multiple), then MaxPool 3x3, strides 2, pads 1, ceil_mode: a 5x5 output
  // whose edge windows are cut by the image. Against a double loop.
  const std::int64_t cin = 4, c = 20, side = 9, out_side = 5;
  const std::vector<float> w = Floats(static_cast<std::size_t>(c * cin), 0.5f, 11);
  Tensor x = Make({1, cin, side, side}, Wave);
  const std::vector<double> conv = test::NaivePointwise(x, w, c);
  std::vector<double> y;
  for (std::int64_t o = 0; o < c; ++o)
    for (std::int64_t oh = 0; oh < out_side; ++oh)
      for (std::int64_t ow = 0; ow < out_side; ++ow) {
        double m = -INFINITY;
        for (std::int64_t ih = std::max<std::int64_t>(oh * 2 - 1, 0); ih < std::min<std::int64_t>(oh * 2 + 2, side); ++ih)
          for (std::int64_t iw = std::max<std::int64_t>(ow * 2 - 1, 0); iw < std::min<std::int64_t>(ow * 2 + 2, side); ++iw)
            m = std::max(m, conv[static_cast<std::size_t>((o * side + ih) * side + iw)]);
        y.push_back(m);
      }
  for (bool channels_last_input : {false, true}) {
    INFO((channels_last_input ? "channels-last input" : "planar input"));
    const Tensor input = channels_last_input ? test::ChannelsLast(x, "xt") : x;
    // Channels-last: x given as [1, 9, 9, 4], read through a Transpose.
    const std::string read = channels_last_input ? "t = Transpose <perm = [0, 3, 1, 2]> (xt)\n        c = Conv (t, w)"
                                                 : "c = Conv (x, w)";
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)" + std::string(channels_last_input ? "1,9,9,4] xt" : "1,4,9,9] x") + R"(, float[20,4,1,1] w = )" + test::FloatList(w) +
                             R"() => (float[1,20,5,5] y) {
        )" + read + R"(
        y = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1> (c)
      })";
    PlanRun fused = CheckBoth(text, {input}, y, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsContaining(fused, "onnxfuse:max_pool") == 1);
  }
}
