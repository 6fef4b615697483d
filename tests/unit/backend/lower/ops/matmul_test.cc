// Gemm chains (src/backend/lower/ops/matmul.cc): transA read in place, alpha and
// beta, C of shape [N], [M, 1] or [M, N], a folded BatchNormalization and
// Relu. Numbers are checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/runtime/executor.h"
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

namespace {

// alpha * A' B' + beta * C in double, A' = transA ? A^T : A (A stored row-major), B' likewise,
// C [cm, cn] broadcast to [M, N] (empty: none); [M, N] flat.
std::vector<double> NaiveGemm(const Tensor& a, const Tensor& b, const std::vector<float>& c, std::int64_t cm,
                              std::int64_t cn, bool ta, bool tb, double alpha, double beta) {
  const std::int64_t m = ta ? a.dims[1] : a.dims[0], k = ta ? a.dims[0] : a.dims[1], n = tb ? b.dims[0] : b.dims[1];
  std::vector<double> y;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p)
        sum += static_cast<double>(a.data[static_cast<std::size_t>(ta ? p * m + i : i * k + p)]) *
               b.data[static_cast<std::size_t>(tb ? j * k + p : p * n + j)];
      double add = c.empty() ? 0.0 : c[static_cast<std::size_t>((cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j))];
      y.push_back(alpha * sum + beta * add);
    }
  return y;
}

}  // namespace

TEST_CASE("Gemm of two graph inputs: transA, transB, alpha, beta, C a graph input or a constant, or none",
          "[backend_ops]") {
  const std::int64_t m = 3, k = 4, n = 5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::vector<std::int64_t> ad = ta ? std::vector<std::int64_t>{k, m} : std::vector<std::int64_t>{m, k};
      const std::vector<std::int64_t> bd = tb ? std::vector<std::int64_t>{n, k} : std::vector<std::int64_t>{k, n};
      const Tensor a = TensorFrom(ad, Wave, "a"), b = TensorFrom(bd, [](std::int64_t i) { return Wave(7 * i + 3); }, "b");
      const std::string attrs = "transA = " + std::to_string(ta) + ", transB = " + std::to_string(tb);
      const std::string head = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[)" + test::DimsText(ad) + "] a, float[" + test::DimsText(bd) + "] b";
      INFO(attrs);
      {  // C [M, 1] a graph input, alpha 0.5, beta 2 (alpha / beta, C, beta), then Relu
        const Tensor c = TensorFrom({m, 1}, [](std::int64_t i) { return 0.5f - 0.25f * static_cast<float>(i); }, "c");
        std::vector<double> y = NaiveGemm(a, b, c.data, m, 1, ta, tb, 0.5, 2.0);
        for (double& v : y) v = std::max(0.0, v);
        CheckBoth(head + R"(, float[3,1] c) => (float[3,5] y) {
          p = Gemm <)" + attrs + R"(, alpha = 0.5, beta = 2.0> (a, b, c)
          y = Relu (p)
        })",
                  {a, b, c}, y, 1e-5);
      }
      {  // C [N] constant, beta 0.25
        const std::vector<float> c = {1, -2, 3, -4, 5};
        CheckBoth(head + R"(, float[5] c = {1, -2, 3, -4, 5}) => (float[3,5] y) {
          y = Gemm <)" + attrs + R"(, beta = 0.25> (a, b, c)
        })",
                  {a, b}, NaiveGemm(a, b, c, 1, n, ta, tb, 1.0, 0.25), 1e-5);
      }
      {  // torch.mm: no C; alpha 2
        CheckBoth(head + R"() => (float[3,5] y) {
          y = Gemm <)" + attrs + R"(, alpha = 2.0> (a, b)
        })",
                  {a, b}, NaiveGemm(a, b, {}, 0, 0, ta, tb, 2.0, 0.0), 1e-5);
      }
    }
}

TEST_CASE("Gemm whose A is a constant and B a graph input", "[backend_ops]") {
  const Tensor b = TensorFrom({2, 3}, Wave, "b");
  const Tensor a = test::TensorOf("a", {2, 2}, {1, 2, 3, 4});
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] b, float[2,2] a = {1, 2, 3, 4}) => (float[2,3] y) {
      y = Gemm (a, b)
    })",
            {b}, NaiveGemm(a, b, {}, 0, 0, false, false, 1.0, 0.0), 1e-6);
}

TEST_CASE("MatMul of two graph inputs in every broadcast form of rank 1 to 4", "[backend_ops]") {
  const std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> forms = {
      {{3, 4}, {4, 5}}, {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}}, {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 5}}, {{1, 3, 4}, {2, 4, 5}}, {{2, 3, 3, 4}, {1, 3, 4, 5}}, {{2, 1, 3, 4}, {1, 2, 4, 5}},
      // 1-D operands (numpy.matmul): a row [1, K] or a column [K, 1] whose dim leaves the result.
      {{4}, {4, 5}}, {{3, 4}, {4}}, {{4}, {4}}, {{4}, {2, 4, 5}}, {{2, 3, 4}, {4}}};
  for (const auto& [a_dims, b_dims] : forms) {
    const bool row = a_dims.size() == 1, column = b_dims.size() == 1;
    const std::vector<std::int64_t> ad = row ? std::vector<std::int64_t>{1, a_dims[0]} : a_dims;
    const std::vector<std::int64_t> bd = column ? std::vector<std::int64_t>{b_dims[0], 1} : b_dims;
    const Tensor a = TensorFrom(a_dims, Wave, "a"), b = TensorFrom(b_dims, [](std::int64_t i) { return Wave(5 * i + 1); }, "b");
    const std::size_t rank = std::max(ad.size(), bd.size());
    std::vector<std::int64_t> ae = ad, be = bd;
    while (ae.size() < rank) ae.insert(ae.begin(), 1);
    while (be.size() < rank) be.insert(be.begin(), 1);
    std::vector<std::int64_t> out;
    for (std::size_t d = 0; d + 2 < rank; ++d) out.push_back(std::max(ae[d], be[d]));
    const std::int64_t m = ae[rank - 2], k = ae[rank - 1], n = be[rank - 1];
    std::vector<std::int64_t> result = out;  // without the dims a 1-D operand added
    if (!row) result.push_back(m);
    if (!column) result.push_back(n);
    out.push_back(m), out.push_back(n);
    std::vector<double> y;
    std::int64_t batches = 1;
    for (std::size_t d = 0; d + 2 < rank; ++d) batches *= out[d];
    for (std::int64_t bt = 0; bt < batches; ++bt) {
      std::int64_t rest = bt, ao = 0, bo = 0, as = 1, bs = 1;  // each operand's batch offset, broadcast
      for (std::size_t d = rank - 2; d-- > 0;) {
        const std::int64_t i = rest % out[d];
        rest /= out[d];
        ao += (ae[d] == 1 ? 0 : i) * as, bo += (be[d] == 1 ? 0 : i) * bs;
        as *= ae[d], bs *= be[d];
      }
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::int64_t p = 0; p < k; ++p)
            sum += static_cast<double>(a.data[static_cast<std::size_t>(ao * m * k + i * k + p)]) *
                   b.data[static_cast<std::size_t>(bo * k * n + p * n + j)];
          y.push_back(sum);
        }
    }
    INFO(test::DimsText(a_dims) + " x " + test::DimsText(b_dims));
    const std::string y_type = result.empty() ? "float" : "float[" + test::DimsText(result) + "]";
    CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)" + test::DimsText(a_dims) + "] a, float[" + test::DimsText(b_dims) + "] b) => (" + y_type +
                  R"( y) {
        y = MatMul (a, b)
      })",
              {a, b}, y, 1e-5);
  }
}

TEST_CASE("a MatMul of a vector reading x * k scales its result by k", "[backend_ops]") {
  const Tensor a = TensorFrom({4}, Wave, "a"), b = TensorFrom({4, 3}, [](std::int64_t i) { return Wave(5 * i + 1); }, "b");
  std::vector<double> y;
  for (std::int64_t j = 0; j < 3; ++j) {
    double sum = 0;
    for (std::int64_t p = 0; p < 4; ++p)
      sum += 0.5 * a.data[static_cast<std::size_t>(p)] * b.data[static_cast<std::size_t>(p * 3 + j)];
    y.push_back(sum);
  }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] a, float[4,3] b, float k = {0.5}) => (float[3] y) {
      s = Mul (a, k)
      y = MatMul (s, b)
    })",
            {a, b}, y, 1e-6);
}
