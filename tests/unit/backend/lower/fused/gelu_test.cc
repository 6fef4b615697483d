// The Gelu (erf form) decomposition, Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5),
// found by the pattern library and lowered as one pass of our Gelu kernel
// (EmitGeluKernel), src/backend/lower/fused/gelu.cc. After an anchor's chain the chain runs the same
// kernel (lower_group_test.cc).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("a Gelu region is one gelu step in either operand order, other constants or readers run op by op",
          "[gelu]") {
  // The library's Gelu pattern (fuse/pattern_regions.h) decides; the backend
  // lowers what it found by name.
  Graph graph = test::GraphFromText(test::kGeluVariants);
  const std::vector<Tensor> inputs = {
      test::TensorFrom({1, 8}, [](std::int64_t i) { return test::Wave(i); }, "x"),
      test::TensorFrom({1, 8}, [](std::int64_t i) { return test::Wave(i + 8); }, "w"),
      test::TensorFrom({1, 8}, [](std::int64_t i) { return test::Wave(i + 16); }, "u"),
      test::TensorFrom({1, 8}, [](std::int64_t i) { return test::Wave(i + 24); }, "v")};
  const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, inputs, 1e-5);
  INFO(test::StepList(fused));
  // Unnamed nodes are <op>_<index>: q is Div_4, qw Div_9.
  CHECK(test::StepsStartingWith(fused, "gelu Div_4+Gelu ") == 1);
  CHECK(test::StepsStartingWith(fused, "gelu Div_9+Gelu ") == 1);
  CHECK(test::StepsStartingWith(fused, "gelu ") == 2);  // not * 0.25, nor x / sqrt 2 read elsewhere
}

TEST_CASE("the Gelu decomposition of a graph input is one gelu step, exact to the erf formula", "[gelu][activation]") {
  // 2 x 3 x 37 values (a vector tail) over about [-6, 6]: erf saturates at both ends.
  const Tensor x = test::TensorFrom({2, 3, 37}, [](std::int64_t i) { return static_cast<float>(i % 97) / 8.f - 6.f; });
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,37] x) => (float[2,3,37] y) {
)" + test::GeluText("x", "y") + "}";
  std::vector<double> expected;
  for (float v : x.data) expected.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  // Our Gelu kernel's error is absolute: below 3e-7 |x| (activation.h), |x| <= 6 here.
  const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5, 3e-7 * 6);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "gelu Div_1+Gelu onnxfuse:custom") == 1);
  CHECK(fused.stats.kernels == 1);
}

TEST_CASE("a Div lowered in an earlier group is not taken for a Gelu's when its input's other Div is lowered",
          "[gelu][difftest]") {
  // Difftest seed 33113620 (tests/difftest/cases/averagepool-div-globalaveragepool-add-s33113620):
  // v1 feeds two Divs. The post-dominator groups are {Div_2} and then
  // {Div_1, GlobalAveragePool, Add}; lowering Div_1 must not look at v1's
  // other Div, already lowered and its constant c4 released.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4] x, float c2 = {2.0}, float c4 = {4.0}) => (float[1,1,4] v7) {
      v1 = AveragePool <kernel_shape = [1]> (x)
      v3 = Div (v1, c2)
      v5 = Div (v1, c4)
      v6 = GlobalAveragePool (v5)
      v7 = Add (v3, v6)
    })";
  const Tensor x = test::TensorFrom({1, 1, 4}, [](std::int64_t i) { return static_cast<float>(i + 1); });
  const double mean = (1 + 2 + 3 + 4) / 4.0;
  std::vector<double> expected;
  for (float v : x.data) expected.push_back(v / 2.0 + mean / 4.0);
  for (bool fuse : {false, true}) {
    INFO("fuse " << fuse);
    Graph graph = test::GraphFromText(text);
    const FusionPlan plan = test::FusePostdom(graph);
    ExecutablePlan compiled = ExecutablePlan::CompileReleasingWeights(graph, plan, CompileOptions{fuse});
    test::CheckClose(compiled.Run({x}).at(0), expected);
  }
}
