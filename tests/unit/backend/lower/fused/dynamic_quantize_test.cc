// DynamicQuantizeLinear read through Casts to float, lowered in fused mode as
// one step of our kernel (src/backend/lower/fused/dynamic_quantize.cc); the
// unfused plan runs the op and the Casts as host steps
// (src/eval/host_eval_quantize.cc). The two plans agree bit for bit. The
// numbers against ONNX Runtime are ctest e2e.quantized_ops.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Ties of x / scale (scale 2/255 in the first: 1/255 is half a step), both
// signs, all negative, all positive, and an x of zeros (scale 1).
std::vector<std::vector<float>> Inputs() {
  return {{-1.0f, 1.0f, 0.0f, 1.0f / 255, 3.0f / 255, -0.2f, 0.5f, 0.9f},
          {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 2.0f},
          {-3.0f, -2.0f, -1.0f, -0.5f, -0.25f, -0.125f, -4.0f, -1e-3f},
          {0, 0, 0, 0, 0, 0, 0, 0}};
}

Tensor Input(const std::vector<float>& values) {
  return test::TensorFrom({2, 4}, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; }, "x");
}

void CheckBitForBit(const std::string& text, int host_steps_unfused) {
  const Graph graph = test::GraphFromText(text);
  for (const std::vector<float>& x : Inputs()) {
    const test::PlanRun fused = test::RunPlan(graph, true, {Input(x)});
    const test::PlanRun unfused = test::RunPlan(graph, false, {Input(x)});
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "dynamic_quantize DynamicQuantizeLinear_0 onnxfuse:dynamic_quantize") == 1);
    CHECK(test::StepsStartingWith(fused, "host ") == 0);
    CHECK(test::StepsStartingWith(unfused, "host ") == host_steps_unfused);
    REQUIRE(fused.outputs.size() == unfused.outputs.size());
    for (std::size_t i = 0; i < fused.outputs.size(); ++i) CHECK(fused.outputs[i].data == unfused.outputs[i].data);
  }
}

}  // namespace

TEST_CASE("DynamicQuantizeLinear read through Casts to float is one step with the op's values", "[dynamic_quantize]") {
  // y as float, the scale and the zero point as float: every output of the op.
  CheckBitForBit(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4] x) => (float[2,4] y, float s, float zf) {
      q, s, z = DynamicQuantizeLinear (x)
      y = Cast <to = 1> (q)
      zf = Cast <to = 1> (z)
    })",
                 3);
}

TEST_CASE("DynamicQuantizeLinear's y minus its zero point, as the integer products read it, is one step",
          "[dynamic_quantize]") {
  // rewrite/integer_products_as_float.h's operand: Cast (y) - Cast (z), into
  // a MatMul, and a second reader of the same shifted values; y as float too.
  CheckBitForBit(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4] x) => (float[2,3] p, float[2,4] r, float[2,4] y) {
      q, s, z = DynamicQuantizeLinear (x)
      qf = Cast <to = 1> (q)
      zf = Cast <to = 1> (z)
      a = Sub (qf, zf)
      w = Constant <value = float[4,3] {1, -2, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1}> ()
      m = MatMul (a, w)
      p = Mul (m, s)
      qf2 = Cast <to = 1> (q)
      a2 = Sub (qf2, zf)
      r = Relu (a2)
      y = Cast <to = 1> (q)
    })",
                 5);
}

TEST_CASE("DynamicQuantizeLinear whose y or zero point is read as an integer stays a host step", "[dynamic_quantize]") {
  for (const char* outputs : {"uint8[2,4] q, float[2,4] y", "uint8 z, float[2,4] y"}) {
    INFO(outputs);
    const Graph graph = test::GraphFromText(std::string(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[2,4] x) => ()") + outputs + R"() {
        q, s, z = DynamicQuantizeLinear (x)
        y = Cast <to = 1> (q)
      })");
    const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Input(Inputs()[0])}, 0);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "dynamic_quantize ") == 0);
    CHECK(test::StepsStartingWith(fused, "host DynamicQuantizeLinear_0") == 1);
  }
}
