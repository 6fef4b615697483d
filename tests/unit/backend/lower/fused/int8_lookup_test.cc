// Elementwise regions between a DequantizeLinear and a QuantizeLinear run as
// a 256-entry table over the 8-bit tensor (src/backend/lower/fused/int8_lookup.h),
// after an int8 convolution: EfficientNet's SiLU in QDQ form. The unfused
// plan runs the float ops (src/eval/); the two agree within one step of the
// result's scale, and on nearly every element exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x -> Q -> DQ -> Conv (7-bit int8 weights, any CPU's int8 path) -> Q -> DQ
// -> `region` (reading d, writing r) -> Q (scale 0.02, zero point 10) -> DQ -> y.
std::string Model(const std::string& region) {
  std::string w;
  for (int i = 0; i < 8 * 8 * 9; ++i) w += (i ? "," : "") + std::to_string((i * 37) % 129 - 64);
  return R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,8,10,10] x) => (float[1,8,10,10] y) {
    wq = Constant <value = int8[8,8,3,3] {)" + w + R"(}> ()
    ws = Constant <value = float {0.002}> ()
    sx = Constant <value = float {0.01}> ()
    zx = Constant <value = uint8 {128}> ()
    sc = Constant <value = float {0.05}> ()
    zc = Constant <value = uint8 {120}> ()
    sy = Constant <value = float {0.02}> ()
    zy = Constant <value = uint8 {10}> ()
    half = Constant <value = float {0.5}> ()
    gate = Constant <value = float[1,8,1,1] {1, 2, 3, 4, 5, 6, 7, 8}> ()
    wd = DequantizeLinear (wq, ws)
    xq = QuantizeLinear (x, sx, zx)
    xd = DequantizeLinear (xq, sx, zx)
    c = Conv <pads = [1, 1, 1, 1]> (xd, wd)
    cq = QuantizeLinear (c, sc, zc)
    d = DequantizeLinear (cq, sc, zc)
    )" + region + R"(
    yq = QuantizeLinear (r, sy, zy)
    y = DequantizeLinear (yq, sy, zy)
  })";
}

Tensor Input() {
  return test::TensorFrom({1, 8, 10, 10}, [](std::int64_t i) { return 1.2f * test::Wave(i * 7 + 3); }, "x");
}

}  // namespace

TEST_CASE("SiLU and other elementwise regions between quantizations run as one table lookup", "[int8_lookup]") {
  for (const char* region : {"s = Sigmoid (d)\n    r = Mul (d, s)",                         // SiLU
                             "s = Mul (d, half)\n    t = Tanh (s)\n    r = Relu (t)",      // a scalar constant
                             "r = HardSigmoid (d)"}) {
    INFO(region);
    const Graph graph = test::GraphFromText(Model(region));
    const test::PlanRun fused = test::RunPlan(graph, true, {Input()});
    const test::PlanRun unfused = test::RunPlan(graph, false, {Input()});
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "lookup DequantizeLinear_") == 1);
    CHECK(test::StepsStartingWith(fused, "eltwise ") == 0);
    CHECK(test::StepsStartingWith(fused, "binary ") == 0);
    CHECK(test::StepsStartingWith(fused, "host ") == 0);
    const auto& a = fused.outputs.at(0).data;
    const auto& b = unfused.outputs.at(0).data;
    REQUIRE(a.size() == b.size());
    int equal = 0;
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      equal += a[i] == b[i];
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / 0.02);
    }
    CHECK(worst <= 1.0 + 1e-6);                                       // steps of y's scale
    CHECK(equal >= static_cast<int>(0.97 * static_cast<double>(a.size())));
  }
}

TEST_CASE("a region reading a tensor constant stays float", "[int8_lookup]") {
  const Graph graph = test::GraphFromText(Model("r = Mul (d, gate)"));  // a per-channel operand
  const test::PlanRun fused = test::CheckFusedAgainstUnfused(graph, {Input()}, 0);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "lookup ") == 0);
}
