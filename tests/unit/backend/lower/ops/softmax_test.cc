// Softmax and LogSoftmax (src/backend/lower/ops/softmax.cc): over one axis from
// opset 13, over all trailing axes before. Numbers are checked against the
// definition in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "ir/tensor_io.h"
#include "pipeline/prepare_model.h"
#include "plan_check.h"
#include "test_models.h"
#include "ulps.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::TensorFrom;
using test::Ulps;
using test::Wave;

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

namespace {

// The model `op` over axis 1 of x [rows, n] at opset 13, run fused and unfused.
std::vector<test::PlanRun> RunBoth(const char* op, const Tensor& x) {
  const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)") + std::to_string(x.dims[0]) + "," + std::to_string(x.dims[1]) + R"(] x) => (float[)" +
                           std::to_string(x.dims[0]) + "," + std::to_string(x.dims[1]) + R"(] y) {
        y = )" + op + R"( <axis = 1> (x)
      })";
  const Graph graph = test::GraphFromText(text);
  return {test::RunPlan(graph, false, {x}), test::RunPlan(graph, true, {x})};
}

// Row r of x [rows, n]: log-probabilities in long double (the sum's logarithm
// as log1p of the terms other than one maximal one, which is 1).
std::vector<long double> LogProbabilities(const Tensor& x, std::int64_t r) {
  const std::int64_t n = x.dims[1];
  const float* row = x.data.data() + r * n;
  const std::int64_t k = std::max_element(row, row + n) - row;
  long double rest = 0;
  for (std::int64_t j = 0; j < n; ++j)
    if (j != k) rest += std::exp(static_cast<long double>(row[j]) - row[k]);
  std::vector<long double> y;
  for (std::int64_t j = 0; j < n; ++j) y.push_back(static_cast<long double>(row[j]) - row[k] - std::log1p(rest));
  return y;
}

}  // namespace

TEST_CASE("LogSoftmax: exactly 0 over an axis of length 1, never above 0, within 2 ulps", "[backend_ops]") {
  // Any input over an axis of length 1 is log(1) = 0 exactly.
  for (const test::PlanRun& run : RunBoth("LogSoftmax", test::TensorOf("x", {3, 1}, {20.0f, -7.5f, 0.25f})))
    CHECK(run.outputs.at(0).data == std::vector<float>{0, 0, 0});
  // The dominant class of [20, 0, -3, 1], and rows of 1000 values.
  Tensor rows = TensorFrom({3, 1000}, [](std::int64_t i) { return 9.0f * std::sin(0.37f * static_cast<float>(i)); });
  for (const Tensor& x : {test::TensorOf("x", {1, 4}, {20, 0, -3, 1}), rows})
    for (const test::PlanRun& run : RunBoth("LogSoftmax", x))
      for (std::int64_t r = 0; r < x.dims[0]; ++r) {
        const std::vector<long double> exact = LogProbabilities(x, r);
        for (std::size_t j = 0; j < exact.size(); ++j) {
          const float y = run.outputs.at(0).data[static_cast<std::size_t>(r * x.dims[1]) + j];
          INFO("row " << r << ", element " << j << ": " << y << ", exact " << static_cast<double>(exact[j]));
          CHECK(y <= 0.0f);
          CHECK(Ulps(y, exact[j]) <= 2.0);
        }
      }
}

// Softmax on our own kernel (backend/kernels/softmax.h): within 1 ulp.
// oneDNN's softmax_forward, which it replaced, left up to 21 ulps on these rows.
TEST_CASE("Softmax over rows of 1000 values: within 1 ulp of the definition", "[backend_ops]") {
  Tensor x = TensorFrom({3, 1000}, [](std::int64_t i) { return 9.0f * std::sin(0.37f * static_cast<float>(i)); });
  for (const test::PlanRun& run : RunBoth("Softmax", x))
    for (std::int64_t r = 0; r < x.dims[0]; ++r) {
      const std::vector<long double> log_p = LogProbabilities(x, r);
      for (std::size_t j = 0; j < log_p.size(); ++j) {
        const float p = run.outputs.at(0).data[static_cast<std::size_t>(r * x.dims[1]) + j];
        INFO("row " << r << ", element " << j << ": " << p << ", exact " << static_cast<double>(std::exp(log_p[j])));
        CHECK(Ulps(p, std::exp(log_p[j])) <= 1.0);
      }
    }
}

// Softmax -> Log fuses as the SoftmaxLog pattern, one LogSoftmax pass: the
// log-probabilities within 2 ulps (near 0 too, where log of a float p near 1
// is off by many), never above 0; one that underflows in float is -inf, as
// the unfused plan gives it.
TEST_CASE("Softmax then Log, fused: within 2 ulps of the log-probability, -inf where p underflows", "[backend_ops]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,1000] x) => (float[2,1000] y) {
        p = Softmax <axis = 1> (x)
        y = Log (p)
      })";
  Tensor x = TensorFrom({2, 1000}, [](std::int64_t i) { return 9.0f * std::sin(0.37f * static_cast<float>(i)); });
  x.data[1000] = 200.0f;  // row 1: every other probability is below 2^-150
  const Graph graph = test::GraphFromText(text);
  FuseSettings settings;
  settings.strategy = Strategy::kPattern;
  ExecutablePlan plan = ExecutablePlan::Compile(graph, FuseGraph(graph, settings));
  const test::PlanRun fused{plan.Run({x}), plan.stats(), plan.Schedule(), plan.Describe()};
  const test::PlanRun unfused = test::RunPlan(graph, false, {x});
  INFO(test::StepList(fused));
  REQUIRE(fused.schedule.size() == 1);
  CHECK(fused.schedule[0].pattern == "SoftmaxLog");
  for (std::int64_t r = 0; r < 2; ++r) {
    const std::vector<long double> exact = LogProbabilities(x, r);
    for (std::size_t j = 0; j < exact.size(); ++j) {
      const std::size_t at = static_cast<std::size_t>(r * 1000) + j;
      const float y = fused.outputs.at(0).data[at];
      INFO("row " << r << ", element " << j << ": " << y << ", exact " << static_cast<double>(exact[j]));
      CHECK(y <= 0.0f);
      if (r == 0) CHECK(Ulps(y, exact[j]) <= 2.0);
      else if (j > 0) CHECK((y == -INFINITY && unfused.outputs.at(0).data[at] == -INFINITY));
    }
  }
}
