// The QDQ format's Add of two quantized activations
// (src/backend/lower/fused/int8_add.cc): DequantizeLinear of each input,
// Add, [Relu,] QuantizeLinear lowered in fused mode as one pass over the
// 8-bit tensors, against the unfused plan, which runs the ops one by one on
// the host: the same float32 operations, so equal bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

struct Case {
  std::string name;
  std::string b_type = "uint8";
  int b_zero = 120;
  bool relu = false;
  std::string b_dims = "1,8,6,6";  // b's dims: the output's, or a broadcast
  bool int8 = true;                 // expect the quantized_add step
};

std::string ModelText(const Case& c) {
  std::ostringstream text;
  text << R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,6,6] x1, float[)" << c.b_dims << R"(] x2) => (float[1,8,6,6] y) {
      s1 = Constant <value = float {0.05}> ()
      z1 = Constant <value = uint8 {128}> ()
      s2 = Constant <value = float {0.03}> ()
      z2 = Constant <value = )" << c.b_type << " {" << c.b_zero << R"(}> ()
      sy = Constant <value = float {0.07}> ()
      zy = Constant <value = uint8 {30}> ()
      q1 = QuantizeLinear (x1, s1, z1)
      d1 = DequantizeLinear (q1, s1, z1)
      q2 = QuantizeLinear (x2, s2, z2)
      d2 = DequantizeLinear (q2, s2, z2)
      a = Add (d1, d2)
)";
  if (c.relu) text << "      r = Relu (a)\n";
  text << "      yq = QuantizeLinear (" << (c.relu ? "r" : "a") << ", sy, zy)\n      y = DequantizeLinear (yq, sy, zy)\n    }";
  return text.str();
}

void CheckCase(const Case& c) {
  INFO(c.name);
  Graph graph = test::GraphFromText(ModelText(c));
  const Tensor x1 = test::TensorFrom({1, 8, 6, 6}, [](std::int64_t i) { return 5.0f * test::Wave(i * 7 + 3); });
  std::vector<std::int64_t> b_dims;
  std::stringstream dims(c.b_dims);
  for (std::string d; std::getline(dims, d, ',');) b_dims.push_back(std::stoll(d));
  const Tensor x2 = test::TensorFrom(b_dims, [](std::int64_t i) { return 3.0f * test::Wave(i * 11 + 1); }, "x2");
  Tensor x1_named = x1;
  x1_named.name = "x1";
  const test::PlanRun fused = test::RunPlan(graph, true, {x1_named, x2});
  const test::PlanRun unfused = test::RunPlan(graph, false, {x1_named, x2});
  INFO(test::StepList(fused));
  const auto count = [&](const std::string& kind) {
    return std::count_if(fused.schedule.begin(), fused.schedule.end(), [&](const ScheduleStep& s) { return s.kind == kind; });
  };
  CHECK(count("quantized_add") == (c.int8 ? 1 : 0));
  if (c.int8) CHECK(count("binary") == 0);
  CHECK(test::StepsStartingWith(fused, "host ") == 0);
  CHECK(fused.outputs.at(0).data == unfused.outputs.at(0).data);
}

}  // namespace

TEST_CASE("a QDQ Add of two quantized activations is one pass over bytes, equal to the ops bit for bit",
          "[quantize][int8]") {
  CheckCase({"uint8 + uint8"});
  CheckCase({"uint8 + int8", "int8", -7});
  CheckCase({"with a Relu before the QuantizeLinear", "uint8", 120, true});
  CheckCase({"a broadcast input: the float Add", "uint8", 120, false, "1,8,1,1", false});
}
