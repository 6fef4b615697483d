// Products of a run-time matrix and constant weights run as our own AVX2 GEMM
// (src/backend/lower/own_kernels/own_gemm.cc, src/backend/kernels/gemm.h): MatMul with its
// bias Add, a residual Add and Relu in the epilogue; Gemm with transB, alpha, a
// bias C and Clip; rows not a multiple of the 6-row micro-kernel, depths of one
// and of two blocks, the residual overwritten in place; MatMul with Gelu after
// it; convolutions on 7x7 and 14x14 maps, and with a squeeze-and-excitation
// gate; a single row as MatVec (src/backend/kernels/gemv.h), also on AVX-512. Numbers are
// checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::DimsText;
using test::HaveGemmKernel;
using test::PlanRun;
using test::StepsContaining;

namespace {

using Dims = std::vector<std::int64_t>;

float Value(std::int64_t i, int salt) {
  return static_cast<float>(((i * 5 + salt * 7) % 17) - 8) * 0.0625f + 0.01f * static_cast<float>(salt);
}

Tensor Input(const std::string& name, const Dims& dims, int salt) {
  return test::TensorFrom(dims, [salt](std::int64_t i) { return Value(i, salt); }, name);
}

std::vector<float> Values(std::int64_t n, int salt) { return Input("", {n}, salt).data; }

// p[i, n] = sum_k a[i, k] w[k, n] in double, a [rows, depth]; w stored [depth,
// cols], or [cols, depth] when `transposed` (Gemm's transB).
std::vector<double> NaiveProduct(const Tensor& a, const std::vector<float>& w, std::int64_t rows, std::int64_t depth,
                                 std::int64_t cols, bool transposed) {
  std::vector<double> p;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t n = 0; n < cols; ++n) {
      double sum = 0;
      for (std::int64_t k = 0; k < depth; ++k)
        sum += static_cast<double>(a.data[static_cast<std::size_t>(i * depth + k)]) *
               w[static_cast<std::size_t>(transposed ? n * depth + k : k * cols + n)];
      p.push_back(sum);
    }
  return p;
}

}  // namespace

TEST_CASE("MatMul + bias + residual Add + Relu runs as our own GEMM on AVX2", "[gemm]") {
  // a [2, 25, depth] x w [depth, 48]: 50 rows (8 blocks of 6 and 2 left),
  // three 16-column panels; a depth of 700 takes two depth blocks.
  for (std::int64_t depth : {40, 700}) {
    INFO("depth " << depth);
    const std::int64_t rows = 50, cols = 48;
    Tensor a = Input("a", {2, 25, depth}, 1), r = Input("r", {2, 25, cols}, 2);
    const std::vector<float> w = Values(depth * cols, 3), bias = Values(cols, 4);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,25,)" + std::to_string(depth) + R"(] a, float[2,25,48] r, float[)" + std::to_string(depth) +
                             R"(,48] w = )" + test::FloatList(w) + R"(, float[48] bias = )" + test::FloatList(bias) +
                             R"() => (float[2,25,48] y) {
        m = MatMul (a, w)
        s = Add (m, bias)
        t = Add (s, r)
        y = Relu (t)
      })";
    std::vector<double> y = NaiveProduct(a, w, rows, depth, cols, false);
    for (std::size_t i = 0; i < y.size(); ++i)
      y[i] = std::max(y[i] + bias[i % static_cast<std::size_t>(cols)] + r.data[i], 0.0);
    PlanRun fused = CheckBoth(text, {a, r}, y, 1e-4);
    INFO(test::StepList(fused));
    CHECK(StepsContaining(fused, "matmul MatMul_0+Add+Add+Relu onnxfuse:gemm") == (HaveGemmKernel() ? 1 : 0));
    if (HaveGemmKernel()) CHECK(fused.stats.kernels == 1);
  }
}

TEST_CASE("MatMul of 2 to 15 rows runs as our own GEMM on AVX2, in the weights' layout of longer ones", "[gemm]") {
  // A sequence of a few tokens: a [1, rows, 64] x w [64, 32] + bias. The
  // weights are packed in the GEMM's panels at any row count above one, so a
  // model served at many lengths holds them in one layout.
  for (std::int64_t rows : {2, 5, 13, 15}) {
    INFO("rows " << rows);
    const std::int64_t depth = 64, cols = 32;
    Tensor a = Input("a", {1, rows, depth}, 8);
    const std::vector<float> w = Values(depth * cols, 9), bias = Values(cols, 10);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)" + DimsText({1, rows, depth}) + R"(] a, float[64,32] w = )" + test::FloatList(w) +
                             R"(, float[32] bias = )" + test::FloatList(bias) + R"() => (float[)" +
                             DimsText({1, rows, cols}) + R"(] y) {
        m = MatMul (a, w)
        y = Add (m, bias)
      })";
    std::vector<double> y = NaiveProduct(a, w, rows, depth, cols, false);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += bias[i % static_cast<std::size_t>(cols)];
    PlanRun fused = CheckBoth(text, {a}, y, 1e-4);
    INFO(test::StepList(fused));
    CHECK(StepsContaining(fused, "onnxfuse:gemm") == (HaveGemmKernel() ? 1 : 0));
  }
}

TEST_CASE("Gemm with transB, alpha, a bias C and Clip runs as our own GEMM on AVX2, other widths stay on oneDNN",
          "[gemm]") {
  // A [20, 64], B stored [N, 64] (transB = 1), alpha 0.5, C [N], Clip [0, 6].
  // N = 32: two panels. N = 40 is not a multiple of the 16-column panel.
  for (std::int64_t cols : {32, 40}) {
    INFO("N " << cols);
    const std::int64_t rows = 20, depth = 64;
    Tensor a = Input("a", {rows, depth}, 5);
    const std::vector<float> w = Values(cols * depth, 6), c = Values(cols, 7);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[20,64] a, float[)" + DimsText({cols, depth}) + "] w = " + test::FloatList(w) + R"(, float[)" +
                             std::to_string(cols) + "] c = " + test::FloatList(c) + R"(, float lo = {0.0}, float hi = {6.0}) => (float[)" + DimsText({rows, cols}) +
                             R"(] y) {
        m = Gemm <transB = 1, alpha = 0.5> (a, w, c)
        y = Clip (m, lo, hi)
      })";
    std::vector<double> y = NaiveProduct(a, w, rows, depth, cols, true);
    for (std::size_t i = 0; i < y.size(); ++i)
      y[i] = std::clamp(0.5 * y[i] + c[i % static_cast<std::size_t>(cols)], 0.0, 6.0);
    PlanRun fused = CheckBoth(text, {a}, y, 1e-4);
    INFO(test::StepList(fused));
    CHECK(StepsContaining(fused, "onnxfuse:gemm") == (HaveGemmKernel() && cols % 16 == 0 ? 1 : 0));
  }
}

TEST_CASE("Gemm + BatchNormalization runs as our own GEMM on AVX2, the normalization folded into the weights",
          "[gemm]") {
  // A [20, 64] x B stored [32, 64] (transB = 1) + C [32], then inference
  // BatchNormalization over the 32 columns (the channels of [N, C]).
  const std::int64_t rows = 20, depth = 64, cols = 32;
  Tensor a = Input("a", {rows, depth}, 41);
  const std::vector<float> w = Values(cols * depth, 42), c = Values(cols, 43), gamma = Values(cols, 44),
                           beta = Values(cols, 45), mean = Values(cols, 46);
  std::vector<float> var = Values(cols, 47);
  for (float& v : var) v = std::abs(v) + 0.5f;
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[20,64] a, float[32,64] w = )" + test::FloatList(w) + ", float[32] c = " + test::FloatList(c) +
                           ", float[32] gamma = " + test::FloatList(gamma) + ", float[32] beta = " + test::FloatList(beta) +
                           ", float[32] mean = " + test::FloatList(mean) + ", float[32] var = " + test::FloatList(var) +
                           R"() => (float[20,32] y) {
      m = Gemm <transB = 1> (a, w, c)
      y = BatchNormalization <epsilon = 0.001> (m, gamma, beta, mean, var)
    })";
  std::vector<double> y = NaiveProduct(a, w, rows, depth, cols, true);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const std::size_t j = i % static_cast<std::size_t>(cols);
    y[i] = (y[i] + c[j] - mean[j]) / std::sqrt(static_cast<double>(var[j]) + 0.001) * gamma[j] + beta[j];
  }
  PlanRun fused = CheckBoth(text, {a}, y, 1e-4);
  INFO(test::StepList(fused));
  CHECK(StepsContaining(fused, "Gemm_0+BatchNormalization") == 1);
  CHECK(StepsContaining(fused, "onnxfuse:gemm") == (HaveGemmKernel() ? 1 : 0));
}

TEST_CASE("MatMul + bias + Gelu (ONNX's Div, Erf, Add, Mul, Mul) is one chain: the product, then Gelu in place",
          "[gemm]") {
  // a [30, 24] x w [24, 32]; Gelu(x) = x * (erf(x / sqrt 2) + 1) * 0.5 runs
  // as backend/kernels/activation.h's on the product's result.
  const std::int64_t rows = 30, depth = 24, cols = 32;
  Tensor a = Input("a", {rows, depth}, 8);
  const std::vector<float> w = Values(depth * cols, 9), bias = Values(cols, 10);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[30,24] a, float[24,32] w = )" + test::FloatList(w) + R"(, float[32] bias = )" + test::FloatList(bias) +
                           R"(, float root2 = {1.41421356}, float one = {1.0}, float half = {0.5}) => (float[30,32] y) {
      m = MatMul (a, w)
      x = Add (m, bias)
      d = Div (x, root2)
      e = Erf (d)
      p = Add (e, one)
      q = Mul (x, p)
      y = Mul (q, half)
    })";
  std::vector<double> y = NaiveProduct(a, w, rows, depth, cols, false);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double x = y[i] + bias[i % static_cast<std::size_t>(cols)];
    y[i] = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  }
  PlanRun fused = CheckBoth(text, {a}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(StepsContaining(fused, "matmul MatMul_0+Add ") == 1);
  CHECK(StepsContaining(fused, "onnxfuse:gemm") == (HaveGemmKernel() ? 1 : 0));
  CHECK(test::StepsStartingWith(fused, "gelu Div_2+Gelu ") == 1);
  CHECK(fused.stats.kernels == 2);
  CHECK(fused.stats.reorders == 0);
}

namespace {

Tensor AsTensor(const std::vector<double>& v, Dims dims) { return test::TensorOf("", std::move(dims), {v.begin(), v.end()}); }

}  // namespace

TEST_CASE("a convolution on a 7x7 channel-blocked map runs as our GEMM over its im2col rows on AVX2", "[gemm]") {
  // x [1, 16, 7, 7] -> a = Conv 1x1 (16 -> C): oneDNN's, nChw8c on AVX2.
  // Then a k x k Conv of a, pads k / 2, with bias: 5x5 stride 1 into 64
  // channels with the residual a and Relu (C = 64; a 3x3 one would be
  // Winograd's, winograd_kernel_test.cc); 3x3 stride 2 into 64 channels at
  // 4x4 (C = 20: channels padded to 24 in a, packed element by element); 3x3
  // stride 1 into 32 channels, too few for the GEMM to pay (C = 32).
  struct Case {
    std::int64_t c, out, stride, kernel;
    bool residual;
  };
  for (const Case& k : {Case{64, 64, 1, 5, true}, Case{20, 64, 2, 3, false}, Case{32, 32, 1, 3, false}}) {
    const std::int64_t c = k.c, out = k.out, stride = k.stride, kernel = k.kernel, pad = kernel / 2;
    const bool residual = k.residual;
    INFO("C " << c << " -> " << out << ", " << kernel << "x" << kernel << ", stride " << stride
              << (residual ? ", residual" : ""));
    Tensor x = Input("x", {1, 16, 7, 7}, 11);
    const std::vector<float> w0 = Values(c * 16, 12), w1 = Values(out * c * kernel * kernel, 13), b1 = Values(out, 14);
    const std::int64_t side = stride == 1 ? 7 : 4;
    const std::string pads = "pads = [" + DimsText({pad, pad, pad, pad}) + "]";
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,16,7,7] x, float[)" + DimsText({c, 16, 1, 1}) + "] w0 = " + test::FloatList(w0) + ", float[" +
                             DimsText({out, c, kernel, kernel}) + "] w1 = " + test::FloatList(w1) + ", float[" +
                             std::to_string(out) + "] b1 = " + test::FloatList(b1) + ") => (float[" +
                             DimsText({1, out, side, side}) + R"(] y) {
        a = Conv (x, w0)
        )" + (residual ? "b = Conv <" + pads + "> (a, w1, b1)\n        t = Add (b, a)\n        y = Relu (t)"
                       : "y = Conv <" + pads + ", strides = " + std::string(stride == 2 ? "[2, 2]" : "[1, 1]") +
                             "> (a, w1, b1)") + R"(
      })";
    const Tensor a = AsTensor(test::NaiveConv2d(x, w0, c, 1, 1, 0), {1, c, 7, 7});
    std::vector<double> y = test::NaiveConv2d(a, w1, out, kernel, stride, pad);
    for (std::size_t i = 0; i < y.size(); ++i) {
      y[i] += b1[i / static_cast<std::size_t>(side * side)];
      if (residual) y[i] = std::max(0.0, y[i] + a.data[i]);
    }
    PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
    INFO(test::StepList(fused));
    const bool blocked = StepsContaining(fused, "conv Conv_0 jit_1x1:avx2 aBcd8b") == 1;
    CHECK(StepsContaining(fused, std::string("conv Conv_1") + (residual ? "+Add+Relu" : "") + " onnxfuse:gemm aBcd8b") ==
          (HaveGemmKernel() && blocked && out >= 64 ? 1 : 0));
  }
}

TEST_CASE("a squeeze-and-excitation gate before a GEMM convolution scales the rows as they are packed", "[gemm]") {
  // x [1, 16, 7, 7] -> a = Conv 1x1 (16 -> C): oneDNN's, nChw8c on AVX2;
  // the gate s = Sigmoid(GlobalAveragePool(a)) [1, C, 1, 1]; m = a * s; y =
  // Conv 1x1 (m) into 64 channels. Its weights (64 C) outnumber a (49 C), so
  // on oneDNN s would be a pass over a; the GEMM multiplies each channel by s
  // as it packs the rows instead: no step of its own. C = 64 packs by vectors;
  // C = 20 (padded to 24 in a) element by element.
  for (const std::int64_t c : {64, 20}) {
    INFO("C " << c);
    const std::int64_t out = 64;
    Tensor x = Input("x", {1, 16, 7, 7}, 21);
    const std::vector<float> w0 = Values(c * 16, 23), w1 = Values(out * c, 24);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,16,7,7] x, float[)" + DimsText({c, 16, 1, 1}) + "] w0 = " + test::FloatList(w0) + ", float[" +
                             DimsText({out, c, 1, 1}) + "] w1 = " + test::FloatList(w1) + R"() => (float[1,64,7,7] y) {
        a = Conv (x, w0)
        p = GlobalAveragePool (a)
        s = Sigmoid (p)
        m = Mul (a, s)
        y = Conv (m, w1)
      })";
    Tensor a = AsTensor(test::NaiveConv2d(x, w0, c, 1, 1, 0), {1, c, 7, 7});
    for (std::int64_t ch = 0; ch < c; ++ch) {
      double mean = 0;
      for (std::int64_t i = 0; i < 49; ++i) mean += a.data[static_cast<std::size_t>(ch * 49 + i)] / 49.0;
      const double gate = 1.0 / (1.0 + std::exp(-mean));
      for (std::int64_t i = 0; i < 49; ++i) a.data[static_cast<std::size_t>(ch * 49 + i)] *= static_cast<float>(gate);
    }
    const std::vector<double> y = test::NaiveConv2d(a, w1, out, 1, 1, 0);
    PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
    INFO(test::StepList(fused));
    const bool gemm = HaveGemmKernel() && StepsContaining(fused, "conv Conv_0 jit_1x1:avx2 aBcd8b") == 1;
    CHECK(StepsContaining(fused, "onnxfuse:gemm aBcd8b") == (gemm ? 1 : 0));
    // Elsewhere s is a step of its own: on the weights or on a.
    CHECK(StepsContaining(fused, "Mul") == (gemm ? 0 : 1));
  }
}

TEST_CASE("a deep 3x3 convolution into a 14x14 map runs as our GEMM, a 1x1 one there stays on oneDNN", "[gemm]") {
  // x [1, 16, 16, 16] -> a = Conv 1x1 (16 -> 64): oneDNN's, nChw8c on AVX2.
  // y = Conv 3x3 of a, no pads (pads 1 would be Winograd's), with bias: 196
  // rows (two blocks of rows: 120 and 76) by an im2col depth of 576, on the
  // GEMM; z = Conv 1x1 of y (depth 64) stays on oneDNN's jit_1x1, faster there
  // at 14x14.
  const std::int64_t c = 64, out = 64, in_side = 16, side = 14;
  Tensor x = Input("x", {1, 16, in_side, in_side}, 31);
  const std::vector<float> w0 = Values(c * 16, 32), w1 = Values(out * c * 9, 33), b1 = Values(out, 34),
                           w2 = Values(out * out, 35);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,16,16,16] x, float[64,16,1,1] w0 = )" + test::FloatList(w0) + ", float[64,64,3,3] w1 = " +
                           test::FloatList(w1) + ", float[64] b1 = " + test::FloatList(b1) + ", float[64,64,1,1] w2 = " +
                           test::FloatList(w2) + R"() => (float[1,64,14,14] y, float[1,64,14,14] z) {
      a = Conv (x, w0)
      y = Conv (a, w1, b1)
      z = Conv (y, w2)
    })";
  const Tensor a = AsTensor(test::NaiveConv2d(x, w0, c, 1, 1, 0), {1, c, in_side, in_side});
  std::vector<double> y = test::NaiveConv2d(a, w1, out, 3, 1, 0);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += b1[i / static_cast<std::size_t>(side * side)];
  PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
  INFO(test::StepList(fused));
  test::CheckClose(fused.outputs.at(1), test::NaiveConv2d(AsTensor(y, {1, out, side, side}), w2, out, 1, 1, 0), 1e-4);
  const bool gemm = HaveGemmKernel() && StepsContaining(fused, "conv Conv_0 jit_1x1:avx2 aBcd8b") == 1;
  CHECK(StepsContaining(fused, "conv Conv_1 onnxfuse:gemm aBcd8b") == (gemm ? 1 : 0));
  CHECK(StepsContaining(fused, "conv Conv_2 onnxfuse:gemm") == 0);
}

// MatVec serves one row on every CPU with AVX2 or AVX-512 (EmitOwnGemm).
bool OneRowOnMatVec() { return backend::CpuIsa() != backend::Isa::kScalar; }

TEST_CASE("a single row times constant weights runs as MatVec: Gemm with either transB, MatMul with a residual",
          "[gemm]") {
  // Depth 109 = 6 x 16 + 8 + 5: the 16-wide loop, one 8-wide step and a
  // scalar tail. 40 columns: no multiple of the GEMM's 16-column panel; four
  // streams of 10 rows. 300 x 250 weights: over 65536, the rows split over the
  // threads; 250 = 4 x 62 + 2 rows left to do one at a time.
  struct Shape {
    std::int64_t depth, cols;
  };
  for (const Shape s : {Shape{109, 40}, Shape{300, 250}}) {
    for (int trans_b : {0, 1}) {
      INFO("depth " << s.depth << ", N " << s.cols << ", transB " << trans_b);
      Tensor a = Input("a", {1, s.depth}, 51);
      const std::vector<float> w = Values(s.depth * s.cols, 52), c = Values(s.cols, 53);
      const Dims w_dims = trans_b ? Dims{s.cols, s.depth} : Dims{s.depth, s.cols};
      // Gemm, then HardSwish as ONNX exports it: HardSigmoid and Mul.
      const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[1,)" + std::to_string(s.depth) + "] a, float[" + DimsText(w_dims) + "] w = " + test::FloatList(w) +
                               ", float[" + std::to_string(s.cols) + "] c = " + test::FloatList(c) +
                               ") => (float[1," + std::to_string(s.cols) + R"(] y) {
          m = Gemm <transB = )" + std::to_string(trans_b) + R"(> (a, w, c)
          h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (m)
          y = Mul (m, h)
        })";
      std::vector<double> y = NaiveProduct(a, w, 1, s.depth, s.cols, trans_b == 1);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double v = y[i] + c[i];
        y[i] = v * std::clamp(0.16666667 * v + 0.5, 0.0, 1.0);
      }
      PlanRun fused = CheckBoth(text, {a}, y, 1e-4);
      INFO(test::StepList(fused));
      CHECK(StepsContaining(fused, "matmul Gemm_0+HardSigmoid+Mul onnxfuse:gemv") == (OneRowOnMatVec() ? 1 : 0));
    }
  }
  SECTION("MatMul + bias + residual Add + Relu") {
    const std::int64_t depth = 70, cols = 24;
    Tensor a = Input("a", {1, depth}, 54), r = Input("r", {1, cols}, 55);
    const std::vector<float> w = Values(depth * cols, 56), bias = Values(cols, 57);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,70] a, float[1,24] r, float[70,24] w = )" + test::FloatList(w) + ", float[24] bias = " +
                             test::FloatList(bias) + R"() => (float[1,24] y) {
        m = MatMul (a, w)
        s = Add (m, bias)
        t = Add (s, r)
        y = Relu (t)
      })";
    std::vector<double> y = NaiveProduct(a, w, 1, depth, cols, false);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + bias[i] + r.data[i], 0.0);
    PlanRun fused = CheckBoth(text, {a, r}, y, 1e-4);
    INFO(test::StepList(fused));
    CHECK(StepsContaining(fused, "matmul MatMul_0+Add+Add+Relu onnxfuse:gemv") == (OneRowOnMatVec() ? 1 : 0));
  }
}
