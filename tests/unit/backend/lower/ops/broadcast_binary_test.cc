// LowerBroadcastBinary (src/backend/lower/ops/broadcast_binary.cc): Add, Sub, Mul,
// Div and two-input Max whose operands both broadcast run as one "binary" step of our own,
// not as a host step, in either operand order and with a constant operand;
// a binary with a full-shape operand stays on oneDNN. Expected values are
// computed in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::PlanRun;
using test::TensorOf;

TEST_CASE("a binary whose operands both broadcast is one broadcast_binary step, in either operand order",
          "[broadcast_binary]") {
  // d [3,1,2] (computed) against a constant grid g [1,2,2]: RAFT's offsets.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,1,2] x, float[1,2,2] grid = {0.5, -1.0, 2.0, 4.0}) => (float[3,2,2] s, float[3,2,2] q, float[3,2,2] m) {
      d = Relu (x)
      s = Sub (grid, d)
      q = Div (d, grid)
      m = Max (grid, d)
    })";
  const std::vector<float> x = {1, -2, 3, 4, -5, 6};
  const double grid[4] = {0.5, -1.0, 2.0, 4.0};
  std::vector<double> want_s, want_q, want_m;
  for (int n = 0; n < 3; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w) {
        const double d = std::max(0.f, x[static_cast<std::size_t>(n * 2 + w)]);
        want_s.push_back(grid[h * 2 + w] - d);
        want_q.push_back(d / grid[h * 2 + w]);
        want_m.push_back(std::max(d, grid[h * 2 + w]));
      }
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse, {TensorOf("x", {3, 1, 2}, x)});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], want_s);
    test::CheckClose(run.outputs[1], want_q);
    test::CheckClose(run.outputs[2], want_m);
    CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 3);
    CHECK(test::StepsStartingWith(run, "host ") == 0);
  }
}

TEST_CASE("a binary with an operand of the output's shape stays on oneDNN's binary", "[broadcast_binary]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] b = {1.0, 2.0, 3.0}) => (float[2,3] y) {
      y = Mul (x, b)
    })";
  PlanRun run = test::RunPlan(test::GraphFromText(text), true, {TensorOf("x", {2, 3}, {1, 2, 3, 4, 5, 6})});
  INFO(test::StepList(run));
  test::CheckClose(run.outputs[0], {1, 4, 9, 4, 10, 18});
  CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 0);
}
