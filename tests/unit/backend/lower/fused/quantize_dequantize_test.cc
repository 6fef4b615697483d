// The QDQ format's fake quantization, QuantizeLinear then DequantizeLinear of
// one per-tensor scale and zero point, lowered in fused mode as one pass of
// our kernel (src/backend/lower/fused/quantize_dequantize.cc); the unfused
// plan runs the two ops as host steps (src/eval/host_eval_quantize.cc). The
// two plans agree bit for bit; pairs the kernel does not cover stay host steps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x [2, 3, 5] -> Q -> DQ -> Relu -> y, with Q's scale and zero point and DQ's given as ONNX text.
std::string PairText(const std::string& q_params, const std::string& dq_params, const std::string& extra_output = "") {
  return R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,5] x) => (float[2,3,5] y)" + extra_output + R"() {
      s = Constant <value = float {0.25}> ()
      s2 = Constant <value = float {0.5}> ()
      zu = Constant <value = uint8 {128}> ()
      zi = Constant <value = int8 {-3}> ()
      sa = Constant <value = float[3] {0.25, 0.5, 1.0}> ()
      za = Constant <value = uint8[3] {120, 128, 136}> ()
      q = QuantizeLinear )" + q_params + R"(
      d = DequantizeLinear )" + dq_params + R"(
      y = Relu (d)
    })";
}

// Values around every step of scale 0.25 (ties included) and past both ends of the range.
Tensor Input() {
  return test::TensorFrom({2, 3, 5}, [](std::int64_t i) { return 0.125f * static_cast<float>(i * 37 % 600 - 300); }, "x");
}

}  // namespace

TEST_CASE("a QuantizeLinear read by a DequantizeLinear of the same scale and zero point is one float pass",
          "[quantize]") {
  for (const char* zero : {"zu", "zi"}) {
    INFO("zero point " << zero);
    const std::string z = zero;
    Graph graph = test::GraphFromText(PairText("(x, s, " + z + ")", "(q, s, " + z + ")"));
    const Tensor x = Input();
    const test::PlanRun fused = test::RunPlan(graph, true, {x});
    const test::PlanRun unfused = test::RunPlan(graph, false, {x});
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "quantize_dequantize QuantizeLinear_6+DequantizeLinear_7 ") == 1);
    CHECK(test::StepsStartingWith(fused, "host ") == 0);
    CHECK(test::StepsStartingWith(unfused, "host ") == 2);
    CHECK(fused.outputs.at(0).data == unfused.outputs.at(0).data);  // bit for bit, NaN-free
    // The definition: relu(clamp(round(x / 0.25), lo, hi) * 0.25), uint8 zero point 128 or int8 -3.
    const double lo = z == "zu" ? -128 : -125, hi = z == "zu" ? 127 : 130;
    std::vector<double> expected;
    for (float v : x.data) expected.push_back(std::max(0.0, std::min(std::max(static_cast<double>(std::nearbyint(v / 0.25f)), lo), hi) * 0.25));
    test::CheckClose(fused.outputs.at(0), expected, 0, 0);
  }
}

TEST_CASE("pairs the float pass does not cover stay host steps", "[quantize]") {
  const Tensor x = Input();
  for (const auto& [q, dq, extra] :
       {std::tuple<std::string, std::string, std::string>{"(x, s, zu)", "(q, s2, zu)", ""},  // another scale
        {"(x, s, zu)", "(q, s, zu)", ", uint8[2,3,5] q"},                                  // q is a graph output
        {"<axis = 1> (x, sa, za)", "<axis = 1> (q, sa, za)", ""}}) {                      // per axis
    INFO(q << " then " << dq << extra);
    Graph graph = test::GraphFromText(PairText(q, dq, extra));
    const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {x}, 0);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "quantize_dequantize ") == 0);
    CHECK(test::StepsStartingWith(fused, "host ") == 2);
  }
}

TEST_CASE("a QuantizeLinear read by two DequantizeLinear nodes of its parameters is one pass both read",
          "[quantize]") {
  // ONNX Runtime's QDQ models give each consumer of a quantized value its own DequantizeLinear.
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,5] x) => (float[2,3,5] y) {
      s = Constant <value = float {0.25}> ()
      z = Constant <value = uint8 {128}> ()
      q = QuantizeLinear (x, s, z)
      d1 = DequantizeLinear (q, s, z)
      d2 = DequantizeLinear (q, s, z)
      r = Relu (d1)
      y = Add (r, d2)
    })");
  const Tensor x = Input();
  const test::PlanRun fused = test::RunPlan(graph, true, {x});
  const test::PlanRun unfused = test::RunPlan(graph, false, {x});
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "quantize_dequantize QuantizeLinear_2+DequantizeLinear_3+DequantizeLinear_4 ") == 1);
  CHECK(test::StepsStartingWith(fused, "host ") == 0);
  CHECK(test::StepsStartingWith(unfused, "host ") == 3);
  CHECK(fused.outputs.at(0).data == unfused.outputs.at(0).data);
}
