// Elementwise ops as standard-library loops (src/backend/lower/ops/std_math.cc):
// Pow with a constant exponent of several values or an exponent computed at
// run time (broadcast), Round, Selu (also near 0, with Celu) and
// ThresholdedRelu with their attributes. Numbers are checked against the same
// functions in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CompileError;
using test::PlanRun;
using test::TensorFrom;

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
}

TEST_CASE("Pow with an exponent computed at run time, either operand broadcast, or a constant base", "[backend_ops]") {
  struct Form {
    std::vector<std::int64_t> x, p, out;
  };
  for (const Form& f : {Form{{2, 3}, {2, 3}, {2, 3}}, Form{{2, 3}, {3}, {2, 3}}, Form{{3}, {2, 3}, {2, 3}},
                        Form{{2, 1, 3}, {4, 1}, {2, 4, 3}}, Form{{2, 3}, {}, {2, 3}}}) {
    const Tensor x = TensorFrom(f.x, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i % 7); }, "x");
    const Tensor p = TensorFrom(f.p, [](std::int64_t i) { return -1.5f + 0.5f * static_cast<float>(i % 6); }, "p");
    std::vector<double> z;
    const std::size_t rank = f.out.size();
    std::vector<std::int64_t> xe = f.x, pe = f.p;
    while (xe.size() < rank) xe.insert(xe.begin(), 1);
    while (pe.size() < rank) pe.insert(pe.begin(), 1);
    std::int64_t count = 1;
    for (auto d : f.out) count *= d;
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t rest = i, xi = 0, pi = 0, xs = 1, ps = 1;
      for (std::size_t d = rank; d-- > 0;) {
        const std::int64_t c = rest % f.out[d];
        rest /= f.out[d];
        xi += (xe[d] == 1 ? 0 : c) * xs, pi += (pe[d] == 1 ? 0 : c) * ps;
        xs *= xe[d], ps *= pe[d];
      }
      z.push_back(std::pow(static_cast<double>(x.data[static_cast<std::size_t>(xi)]),
                           static_cast<double>(p.data[static_cast<std::size_t>(pi)])));
    }
    auto type = [](const std::vector<std::int64_t>& d) {
      return d.empty() ? std::string("float") : "float[" + test::DimsText(d) + "]";
    };
    INFO(type(f.x) + " ^ " + type(f.p));
    CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + type(f.x) + " x, " + type(f.p) + " p) => (" + type(f.out) + R"( z) {
        z = Pow (x, p)
      })",
              {x, p}, z, 1e-6);
  }
  // A constant exponent that broadcasts X to a larger shape; a constant base and a run-time exponent.
  const Tensor x = TensorFrom({3}, [](std::int64_t i) { return 1.0f + static_cast<float>(i); });
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, float[2,3] p = {1, 2, 3, 4, 5, 6}) => (float[2,3] y) {
      y = Pow (x, p)
    })",
            {x}, {1, 4, 27, 1, 32, 729}, 1e-6);
  const Tensor e = test::TensorOf("e", {3}, {0.5f, 2.0f, -1.0f});
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] e, float[3] k = {4, 3, 8}) => (float[3] y) {
      y = Pow (k, e)
    })",
            {e}, {2, 9, 0.125}, 1e-6);
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

TEST_CASE("Selu and Celu near 0 keep their relative precision: exp(x) - 1 as expm1", "[backend_ops]") {
  // From -1e-3 to -1e-7 and two positive values: float's exp(x) - 1 would
  // cancel to a relative error of about 1e-7 / |x| (5e-4 at -1e-4).
  const std::vector<float> values = {-1e-3f, -3e-4f, -1e-4f, -2e-5f, -1e-6f, -1e-7f, 1e-5f, 0.5f};
  Tensor x = TensorFrom({1, 8}, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; });
  std::vector<double> selu, celu;
  for (float f : values) {
    const double v = f;
    selu.push_back(1.05070102214813232421875 * (v > 0 ? v : 1.67326319217681884765625 * std::expm1(v)));
    celu.push_back(std::max(0.0, v) + std::min(0.0, 2.0 * std::expm1(v / 2.0)));
  }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      y = Selu (x)
    })",
            {x}, selu, 1e-6, 0);
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x) => (float[1,8] y) {
      y = Celu <alpha = 2.0> (x)
    })",
            {x}, celu, 1e-6, 0);
}
