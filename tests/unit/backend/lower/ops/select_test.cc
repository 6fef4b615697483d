// Where on float32 data (src/backend/lower/ops/select.cc): one "where" step of our
// own, whether the condition is a constant (a causal mask) or computed at run
// time, with broadcast operands; integer data stays a host step. Expected
// values are worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::PlanRun;
using test::TensorOf;

TEST_CASE("a constant causal mask selects between scores and -1e30 in one where step", "[select]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] s, bool[1,1,3,3] mask = {1, 0, 0, 1, 1, 0, 1, 1, 1}, float ninf = {-1e30}) => (float[1,2,3,3] y) {
      w = Where (mask, s, ninf)
      y = Softmax <axis = -1> (w)
    })";
  std::vector<float> scores(18);
  for (std::size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<float>(i % 5) * 0.5f;
  // Row r of each head keeps columns 0..r: softmax over those, 0 elsewhere.
  std::vector<double> want;
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 3; ++r) {
      double sum = 0;
      for (int col = 0; col <= r; ++col) sum += std::exp(scores[static_cast<std::size_t>(h * 9 + r * 3 + col)]);
      for (int col = 0; col < 3; ++col)
        want.push_back(col <= r ? std::exp(scores[static_cast<std::size_t>(h * 9 + r * 3 + col)]) / sum : 0.0);
    }
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse, {TensorOf("s", {1, 2, 3, 3}, scores)});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], want);
    CHECK(test::StepsStartingWith(run, "where ") == 1);
    CHECK(test::StepsStartingWith(run, "host ") == 0);
  }
}

TEST_CASE("a mask computed at run time is a host step, the selection a where step, and integer data stays on the host",
          "[select]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] y, float zero = {0.0}) => (float[2,3] out) {
      m = Less (x, zero)
      out = Where (m, y, x)
    })";
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse,
                                {TensorOf("x", {2, 3}, {-1.f, 2.f, -3.f, 4.f, 0.f, -6.f}), TensorOf("y", {3}, {10.f, 20.f, 30.f})});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], {10, 2, 30, 4, 0, 30});
    CHECK(test::StepsStartingWith(run, "host ") == 1);
    CHECK(test::StepsStartingWith(run, "where ") == 1);
  }
  PlanRun ints = test::RunPlan(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (bool[3] c, int64[3] a, int64[3] b) => (int64[3] out) { out = Where (c, a, b) })"),
                               true,
                               {test::IntTensorOf("c", {3}, {1, 0, 1}), test::IntTensorOf("a", {3}, {1, 2, 3}),
                                test::IntTensorOf("b", {3}, {-1, -2, -3})});
  CHECK(ints.outputs[0].int_data == std::vector<std::int64_t>{1, -2, 3});
  CHECK(test::StepsStartingWith(ints, "host ") == 1);
}
