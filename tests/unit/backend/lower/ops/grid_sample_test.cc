// LowerGridSample (src/backend/lower/ops/grid_sample.cc) and its kernel
// (backend/kernels/grid_sample.h): every mode it takes, padding_mode and
// align_corners on a grid that reaches outside the image, against the host
// evaluator (host_eval_sample.cc, itself checked against the ONNX node tests)
// in double; bicubic stays a host step. The node tests of GridSample run
// through the plan in the conformance test.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::PlanRun;

namespace {

std::string GridSampleModel(const std::string& mode, const std::string& padding, int align_corners) {
  return "<ir_version: 8, opset_import: [\"\" : 16]>\n"
         "g (float[2,3,5,4] x, float[2,3,6,2] grid) => (float[2,3,3,6] y) {\n"
         "  y = GridSample <mode = \"" + mode + "\", padding_mode = \"" + padding + "\", align_corners = " +
         std::to_string(align_corners) + "> (x, grid)\n}";
}

}  // namespace

TEST_CASE("GridSample, bilinear and nearest with every padding, is one grid_sample step equal to the host evaluator",
          "[grid_sample]") {
  const Tensor x = test::TensorFrom({2, 3, 5, 4}, test::Wave, "x");
  // Points in [-1.44, 1.46]: inside, near the borders, and outside the image;
  // none half way between two pixels (nearest's ties would round one way in
  // float, as the kernel computes, and the other in double).
  const Tensor grid = test::TensorFrom(
      {2, 3, 6, 2}, [](std::int64_t i) { return static_cast<float>((i * 37 % 59) - 29) * 0.05f + 0.0123f; }, "grid");
  for (const std::string mode : {"bilinear", "nearest"})
    for (const std::string padding : {"zeros", "border", "reflection"})
      for (int align_corners : {0, 1}) {
        INFO(mode << " " << padding << " align_corners " << align_corners);
        const Graph g = test::GraphFromText(GridSampleModel(mode, padding, align_corners));
        const Tensor want = eval::EvalOnHost(g.node(0), {&x, &grid}, g.opset()).at(0);
        std::vector<double> expected(want.data.begin(), want.data.end());
        for (bool fuse : {true, false}) {
          PlanRun run = test::RunPlan(g, fuse, {x, grid});
          INFO(test::StepList(run));
          // The kernel weighs pixels by coordinates in float (grid_sample.h), the
          // evaluator in double: rounding of the pixels' scale (|x| <= 1).
          test::CheckClose(run.outputs[0], expected, 1e-5, 1e-6);
          CHECK(test::StepsContaining(run, "onnxfuse:grid_sample") == 1);
          CHECK(test::StepsStartingWith(run, "host ") == 0);
        }
      }
}

TEST_CASE("bicubic GridSample stays a host step", "[grid_sample]") {
  const Tensor x = test::TensorFrom({2, 3, 5, 4}, test::Wave, "x");
  const Tensor grid = test::TensorFrom({2, 3, 6, 2}, [](std::int64_t i) { return static_cast<float>(i % 7) * 0.2f - 0.6f; }, "grid");
  const Graph g = test::GraphFromText(GridSampleModel("bicubic", "zeros", 0));
  const Tensor want = eval::EvalOnHost(g.node(0), {&x, &grid}, g.opset()).at(0);
  PlanRun run = test::RunPlan(g, true, {x, grid});
  test::CheckClose(run.outputs[0], std::vector<double>(want.data.begin(), want.data.end()), 1e-5);
  CHECK(test::StepsContaining(run, "onnxfuse:grid_sample") == 0);
  CHECK(test::StepsStartingWith(run, "host ") == 1);
}

TEST_CASE("GridSample after a Conv reads the Conv's output made plain", "[grid_sample]") {
  // An identity 1x1 Conv (blocked or channels-last output) then GridSample
  // with grid points at pixel centres (align_corners): the pixels themselves,
  // in the grid's order.
  const std::vector<float> identity = {1, 0, 0, 1};
  const Tensor x = test::TensorOf("x", {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor grid = test::TensorOf("g", {1, 1, 2, 2}, {1, -1, -1, 1});  // (x, y): top right, bottom left
  const Graph g = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 16]>
    g (float[1,2,2,2] x, float[1,1,2,2] g, float[2,2,1,1] w = )" + test::FloatList(identity) +
                                      R"() => (float[1,2,1,2] y) {
      c = Conv (x, w)
      y = GridSample <align_corners = 1> (c, g)
    })");
  for (bool fuse : {true, false}) {
    const test::PlanRun run = test::RunPlan(g, fuse, {x, grid});
    INFO(test::StepList(run));
    CHECK(test::StepsContaining(run, "onnxfuse:grid_sample") == 1);
    test::CheckClose(run.outputs[0], {2, 3, 6, 7});
  }
}
