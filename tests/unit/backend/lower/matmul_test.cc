// Gemm chains (src/backend/lower/matmul.cc): transA read in place, alpha and
// beta, C of shape [N], [M, 1] or [M, N], a folded BatchNormalization and
// Relu. Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "onnxfuse/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

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
