// Splitting a fused chain whose primitive would be slow (src/backend/lower/core/chain.h,
// "Splitting"): oneDNN 2.6 serves a convolution with a spatially broadcast
// binary post-op ([1,1,H,W]) only by its gemm kernel, while the convolution
// alone gets a jit one. The conv then keeps the post-ops before the binary and
// the rest runs as a binary primitive in place on its output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// n values f(0..n-1) and their ONNX text initializer "{v0, v1, ...}".
std::vector<float> Values(std::size_t n, const std::function<float(std::size_t)>& f, std::string& text) {
  std::vector<float> v;
  std::ostringstream out;
  out << std::setprecision(9) << "{";
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(f(i));
    out << (i ? ", " : "") << v.back();
  }
  out << "}";
  text = out.str();
  return v;
}

// A sign-alternating ramp: ((i mod `period`) - `period`/2) * `step`.
std::function<float(std::size_t)> Ramp(int period, float step) {
  return [=](std::size_t i) {
    return static_cast<float>(static_cast<int>(i % static_cast<std::size_t>(period)) - period / 2) * step;
  };
}

Tensor Input(std::vector<std::int64_t> dims, const std::function<float(std::size_t)>& f, std::string name) {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.NumElements()); ++i) t.data.push_back(f(i));
  return t;
}

bool Slow(const ScheduleStep& s) {
  bool gemm_conv = (s.kind == "conv" || s.kind == "deconv") && s.impl.find("gemm") != std::string::npos;
  return s.impl.rfind("ref", 0) == 0 || gemm_conv;
}

const ScheduleStep* FindStep(const std::vector<ScheduleStep>& schedule, const std::string& kind) {
  for (const ScheduleStep& s : schedule)
    if (s.kind == kind) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("a conv whose broadcast binary post-op needs a gemm kernel is split: jit conv, then a binary",
          "[executor][split]") {
  // y = Relu(BN(Conv(x, w)) + k), k [1,1,6,6] broadcast over channels.
  const std::int64_t C = 4, H = 6;
  std::string w_text, k_text;
  auto w = Values(C * C * 9, Ramp(11, 0.0625f), w_text);
  auto k = Values(H * H, Ramp(5, 0.5f), k_text);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,6,6] x, float[4,4,3,3] w = )" + w_text + R"(, float[1,1,6,6] k = )" + k_text + R"(,
       float[4] s = {2.0, 0.5, 1.0, -1.0}, float[4] t = {0.3, -0.1, 0.0, 0.2}, float[4] m = {0.05, -0.4, 0.0, 0.1},
       float[4] v = {0.25, 4.0, 1.0, 0.5})
      => (float[1,4,6,6] y) {
      c = Conv <pads = [1, 1, 1, 1], kernel_shape = [3, 3]> (x, w)
      n = BatchNormalization <epsilon = 0.001> (c, s, t, m, v)
      a = Add (n, k)
      y = Relu (a)
    })";
  Tensor x = Input({1, C, H, H}, Ramp(7, 0.25f), "x");
  const double s[] = {2.0, 0.5, 1.0, -1.0}, t[] = {0.3, -0.1, 0.0, 0.2}, m[] = {0.05, -0.4, 0.0, 0.1};
  const double v[] = {0.25, 4.0, 1.0, 0.5};
  std::vector<double> y = test::NaiveConv2d(x, w, C, 3, 1, 1);
  for (std::size_t i = 0; i < y.size(); ++i) {
    std::size_t c = i / static_cast<std::size_t>(H * H), hw = i % static_cast<std::size_t>(H * H);
    y[i] = std::max(0.0, (y[i] - m[c]) * s[c] / std::sqrt(v[c] + 0.001) + t[c] + k[hw]);
  }
  test::PlanRun fused = test::CheckBoth(text, {x}, y, 1e-4);
  const PlanStats& stats = fused.stats;
  const auto& schedule = fused.schedule;
  const ScheduleStep* conv = FindStep(schedule, "conv");
  const ScheduleStep* binary = FindStep(schedule, "binary");
  REQUIRE(conv);
  REQUIRE(binary);
  CHECK(conv->label == "Conv_0+BatchNormalization");
  CHECK(conv->impl.find("gemm") == std::string::npos);
  CHECK(conv->impl.rfind("ref", 0) != 0);
  CHECK(binary->label == "Add_2+Relu");  // the Relu rides on the binary as its post-op
  CHECK(binary->layout == conv->layout);  // in place on the conv's output
  for (const ScheduleStep& step : schedule) {
    INFO(step.kind << " " << step.label << " " << step.impl);
    CHECK_FALSE(Slow(step));
  }
  CHECK(stats.kernels - stats.reorders == 2);
}

TEST_CASE("a split chain keeps a sum in place only when its tail does not read the addend", "[executor][split]") {
  // y = (Relu(Conv(x, w) + zz) + k) * zz with zz = Relu(z): the conv takes the
  // residual sum (and the Relu); Add k and Mul zz run after it, so zz, which
  // the sum would overwrite in place, must be copied first.
  const std::int64_t C = 4, H = 6;
  std::string w_text, k_text;
  auto w = Values(C * C * 9, Ramp(13, 0.03125f), w_text);
  auto k = Values(H * H, Ramp(3, 0.75f), k_text);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,6,6] x, float[1,4,6,6] z, float[4,4,3,3] w = )" + w_text + R"(, float[1,1,6,6] k = )" + k_text + R"()
      => (float[1,4,6,6] y) {
      zz = Relu (z)
      c = Conv <pads = [1, 1, 1, 1]> (x, w)
      a = Add (c, zz)
      r = Relu (a)
      p = Add (r, k)
      y = Mul (p, zz)
    })";
  Tensor x = Input({1, C, H, H}, Ramp(7, 0.25f), "x");
  Tensor z = Input({1, C, H, H}, Ramp(9, 0.2f), "z");
  std::vector<double> y = test::NaiveConv2d(x, w, C, 3, 1, 1);
  for (std::size_t i = 0; i < y.size(); ++i) {
    double zz = std::max(0.0f, z.data[i]);
    y[i] = (std::max(0.0, y[i] + zz) + k[i % static_cast<std::size_t>(H * H)]) * zz;
  }
  const auto schedule = test::CheckBoth(text, {x, z}, y, 1e-4).schedule;
  const ScheduleStep* conv = FindStep(schedule, "conv");
  REQUIRE(conv);
  CHECK(conv->impl.find("gemm") == std::string::npos);
  CHECK(conv->impl.rfind("ref", 0) != 0);
  std::vector<std::string> labels;
  for (const ScheduleStep& step : schedule) {
    INFO(step.kind << " " << step.label << " " << step.impl);
    CHECK_FALSE(Slow(step));
    labels.push_back(step.kind + " " + step.label);
  }
  // The conv names the nodes it runs; Add k and Mul zz run as one binary with a
  // post-op, or as two when oneDNN serves that only by its reference kernel.
  CHECK(std::count(labels.begin(), labels.end(), "conv Conv_1+Add+Relu") == 1);
  CHECK(std::count(labels.begin(), labels.end(), "binary Add_4+Mul") +
            std::min(std::count(labels.begin(), labels.end(), "binary Add_4"),
                     std::count(labels.begin(), labels.end(), "binary Mul_5")) ==
        1);
}

TEST_CASE("a binary post-op that oneDNN runs only on its reference kernel runs on ours, in a channels-last tail",
          "[executor][split]") {
  // y = Conv(x, I) * k, k [2,24,5,1] (one value per image, channel and row):
  // oneDNN 2.6 takes such a binary post-op only on its gemm convolution, and
  // the binary alone on the convolution's layout only on its reference
  // kernel (found by the differential tester). The convolution writes
  // channels-last and our BroadcastBinary multiplies in place, in the
  // tensor's physical order.
  const std::int64_t N = 2, C = 24, H = 5, W = 7;
  std::string w_text, k_text;
  Values(static_cast<std::size_t>(C * C), [&](std::size_t i) { return i / C == i % C ? 1.f : 0.f; }, w_text);
  auto k = Values(static_cast<std::size_t>(N * C * H), Ramp(13, 0.125f), k_text);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,24,5,7] x, float[24,24,1,1] w = )" + w_text + R"(, float[2,24,5,1] k = )" + k_text + R"()
      => (float[2,24,5,7] y) {
      c = Conv (x, w)
      y = Mul (c, k)
    })";
  Tensor x = Input({N, C, H, W}, Ramp(11, 0.25f), "x");
  std::vector<double> y;
  for (std::size_t i = 0; i < x.data.size(); ++i) y.push_back(double{x.data[i]} * k[i / static_cast<std::size_t>(W)]);
  const test::PlanRun fused = test::CheckBoth(text, {x}, y, 1e-6);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
  CHECK(test::StepsContaining(fused, "onnxfuse:broadcast_binary") == 1);
}

TEST_CASE("a lone binary tail step on a plain destination that oneDNN runs on its reference kernel runs on ours",
          "[executor][split]") {
  // y = Softplus(Conv(x, w) - k) with one channel: the convolution's
  // channels-last destination is also plain, and oneDNN 2.6's binary with
  // the soft_relu post-op on it was its reference kernel.
  std::string k_text;
  auto k = Values(25, Ramp(7, 0.25f), k_text);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1,5,5] x, float[1,1,1,1] w = {2.0}, float[1,1,5,5] k = )" + k_text + R"()
      => (float[2,1,5,5] y) {
      c = Conv (x, w)
      d = Sub (c, k)
      y = Softplus (d)
    })";
  Tensor x = Input({2, 1, 5, 5}, Ramp(9, 0.5f), "x");
  std::vector<double> y;
  for (std::size_t i = 0; i < x.data.size(); ++i) y.push_back(std::log1p(std::exp(2.0 * x.data[i] - k[i % 25])));
  const test::PlanRun fused = test::CheckBoth(text, {x}, y, 1e-5);
  INFO(test::StepList(fused));
  // (On AVX2 oneDNN 2.6 runs this one-channel convolution on gemm, its
  // post-ops with it.)
  CHECK(test::StepsContaining(fused, " ref:") == 0);
}

TEST_CASE("an eltwise tail that is not 0 at 0 on a destination with padded channels runs channels-last",
          "[executor][split]") {
  // A 1-D ConvTranspose into one channel writes nCw16c (15 of 16 channels
  // padding) and takes the chain's first post-ops; the tail, an Add of a
  // constant (linear with a shift) and a Mul, oneDNN 2.6 runs on such a
  // layout only on its reference kernel, which keeps the padding 0. The tail
  // runs after a reorder to nwc instead (found by the differential tester,
  // seed 96000364).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1,9] x, float[1,1,3] w = {0.567237759, 0.896154462, -0.333444567}, float[1] s = {0.924888726},
       float[1] t = {0.253295786}, float[1] m = {0.174047504}, float[1] v = {0.646194635}, float c = {0.941},
       float[9] k = {-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0}) => (float[2,1,9] y) {
      d = ConvTranspose <kernel_shape = [3], pads = [1, 1]> (x, w)
      b = BatchNormalization (d, s, t, m, v)
      g1 = Sigmoid (b)
      sw = Mul (b, g1)
      h = HardSigmoid (sw)
      g2 = Sigmoid (h)
      ab = Abs (g2)
      a = Add (ab, c)
      y = Mul (a, k)
    })";
  Graph graph = test::GraphFromText(text);
  const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Input({2, 1, 9}, Ramp(9, 0.25f), "x")}, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
}
