// Dynamic quantization's products as oneDNN int8 matmuls on CPUs with VNNI
// (src/backend/lower/fused/int8_matmul.h): the u8 values DynamicQuantizeLinear
// writes, their zero point given at run time, s8 weights. Their sums are the
// float product's exactly (integers below 2^24), so fused and unfused plans
// agree bit for bit. ctest runs this file natively and as int8_matmul.AVX2,
// where the float product runs instead.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "backend/lower/core/onednn_limits.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x [2, 5, 8] -> DynamicQuantizeLinear -> (Cast (y) - Cast (z)) x W [8, 3] -> * (y_scale * 0.01) -> + bias -> Relu.
// `scale_first`: the scale's product is listed before the MatMul, so that the
// product's chain reaches the Mul by it, the bias and the Relu.
std::string Model(const std::string& weights, bool scale_first = false) {
  const std::string scale = R"(
      ws = Constant <value = float {0.01}> ()
      scale = Mul (s, ws))";
  return R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,5,8] x) => (float[2,5,3] p) {
      q, s, z = DynamicQuantizeLinear (x)
      qf = Cast <to = 1> (q)
      zf = Cast <to = 1> (z)
      a = Sub (qf, zf))" + (scale_first ? scale : "") + R"(
      w = Constant <value = float[8,3] {)" + weights + R"(}> ()
      m = MatMul (a, w))" + (scale_first ? "" : scale) + R"(
      d = Mul (m, scale)
      bias = Constant <value = float[3] {0.5, -1, 2}> ()
      e = Add (d, bias)
      p = Relu (e)
    })";
}

int Int8MatMuls(const test::PlanRun& run) {
  return static_cast<int>(std::count_if(run.schedule.begin(), run.schedule.end(), [](const ScheduleStep& s) {
    return s.kind == "matmul" && s.data_type == "u8";
  }));
}

Tensor Input() {
  return test::TensorFrom({2, 5, 8}, [](std::int64_t i) { return 3.0f * test::Wave(i * 11 + 5); }, "x");
}

}  // namespace

TEST_CASE("a dynamically quantized MatMul of int8 weights runs as an int8 matmul where the CPU has VNNI",
          "[int8_matmul]") {
  const bool vnni = backend::HasInt8DotProduct();
  if (!vnni) WARN("this CPU (or ONEDNN_MAX_CPU_ISA) has no VNNI: the int8 matmul is not run here, only its float fallback");
  // The scale's product after the MatMul (ONNX Runtime's order) or before it:
  // then the product's chain holds the Mul by it and the bias, which oneDNN
  // 2.6.3's int8 matmul with run-time rows cannot take (it crashes running
  // binary post-ops): they run after it.
  for (const bool scale_first : {false, true}) {
    INFO("scale first: " << scale_first);
    const Graph graph = test::GraphFromText(
        Model("127, -128, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1, 3, 3, -3, 0, 0, 9, -9, 4, 2, 100, 1, -5", scale_first));
    const test::PlanRun fused = test::RunPlan(graph, true, {Input()});
    const test::PlanRun unfused = test::RunPlan(graph, false, {Input()});
    INFO(test::StepList(fused));
    CHECK(Int8MatMuls(fused) == (vnni ? 1 : 0));
    CHECK(test::StepsStartingWith(fused, "matmul ") == 1);  // one product; its scale, bias and Relu after it
    CHECK(test::StepsStartingWith(fused, "host ") == 0);
    CHECK(fused.outputs.at(0).data == unfused.outputs.at(0).data);
  }
}

TEST_CASE("weights that are not int8 values keep the float product", "[int8_matmul]") {
  for (const char* weights : {"200, -128, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1, 3, 3, -3, 0, 0, 9, -9, 4, 2, 1, 1, -5",
                              "0.5, -128, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1, 3, 3, -3, 0, 0, 9, -9, 4, 2, 1, 1, -5"}) {
    INFO(weights);
    const Graph graph = test::GraphFromText(Model(weights));
    const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Input()}, 1e-6);
    INFO(test::StepList(fused));
    CHECK(Int8MatMuls(fused) == 0);
    CHECK(test::StepsStartingWith(fused, "dynamic_quantize ") == 1);
  }
}
