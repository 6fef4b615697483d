// The self-checks' test hook (src/backend/lower/core/fault_injection.h, with the
// fault of tests/support/fault_injection.h installed by test::FaultAt): with
// ONNXFUSE_FAULT_NODE=NAME, a fused plan adds 1 to node NAME's first output
// where it is materialized; unfused plans, other nodes and values inside a
// chain are left alone; without the hook the variable does nothing.
// runtime/verify_test.cc uses it to test the localization of a difference.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Conv_0 -> Relu_1 (one chain: c is never materialized) -> Exp_2.
const char* const kModel = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[3,2,1,1] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25}) => (float[1,3,4,4] y, float[1,3,4,4] z) {
  c = Conv (x, w)
  y = Relu (c)
  z = Exp (y)
}
)";

}  // namespace

TEST_CASE("ONNXFUSE_FAULT_NODE adds 1 to a materialized output of a fused plan, as a step of its own",
          "[fault_injection]") {
  const Graph graph = test::GraphFromText(kModel);
  const std::vector<Tensor> inputs = {test::TensorFrom({1, 2, 4, 4}, test::Wave)};
  const test::PlanRun right = test::RunPlan(graph, true, inputs);
  REQUIRE(right.outputs.size() == 2);
  CHECK(test::StepsStartingWith(right, "fault ") == 0);

  test::FaultAt fault("Relu_1");
  const test::PlanRun wrong = test::RunPlan(graph, true, inputs);
  INFO(test::StepList(wrong));
  CHECK(test::StepsStartingWith(wrong, "fault Relu_1 (ONNXFUSE_FAULT_NODE) onnxfuse:custom") == 1);
  REQUIRE(wrong.outputs[0].data.size() == right.outputs[0].data.size());
  for (std::size_t i = 0; i < right.outputs[0].data.size(); ++i) {
    INFO("element " << i);
    CHECK(wrong.outputs[0].data[i] == right.outputs[0].data[i] + 1.f);
    // Exp reads the altered y: e^(y + 1) = e * e^y.
    CHECK(wrong.outputs[1].data[i] == Approx(std::exp(1.0) * right.outputs[1].data[i]).epsilon(1e-5));
  }
}

TEST_CASE("ONNXFUSE_FAULT_NODE changes nothing unfused, inside a chain or for an unknown node", "[fault_injection]") {
  const Graph graph = test::GraphFromText(kModel);
  const std::vector<Tensor> inputs = {test::TensorFrom({1, 2, 4, 4}, test::Wave)};
  const test::PlanRun fused = test::RunPlan(graph, true, inputs), unfused = test::RunPlan(graph, false, inputs);
  for (const char* node : {"Relu_1", "Conv_0", "Sigmoid_9"}) {
    INFO("ONNXFUSE_FAULT_NODE=" << node);
    test::FaultAt fault(node);
    const test::PlanRun plain = test::RunPlan(graph, false, inputs);
    CHECK(test::StepsStartingWith(plain, "fault ") == 0);
    CHECK(plain.outputs[0].data == unfused.outputs[0].data);
    if (std::string(node) == "Relu_1") continue;  // fused, the one that is materialized
    const test::PlanRun chained = test::RunPlan(graph, true, inputs);
    CHECK(test::StepsStartingWith(chained, "fault ") == 0);
    CHECK(chained.outputs[0].data == fused.outputs[0].data);
    CHECK(chained.outputs[1].data == fused.outputs[1].data);
  }
}

TEST_CASE("without the test hook, the library ignores ONNXFUSE_FAULT_NODE", "[fault_injection]") {
  const Graph graph = test::GraphFromText(kModel);
  const std::vector<Tensor> inputs = {test::TensorFrom({1, 2, 4, 4}, test::Wave)};
  const test::PlanRun right = test::RunPlan(graph, true, inputs);
  setenv("ONNXFUSE_FAULT_NODE", "Relu_1", 1);
  const test::PlanRun shipped = test::RunPlan(graph, true, inputs);
  unsetenv("ONNXFUSE_FAULT_NODE");
  CHECK(test::StepsStartingWith(shipped, "fault ") == 0);
  CHECK(shipped.outputs[0].data == right.outputs[0].data);
}
