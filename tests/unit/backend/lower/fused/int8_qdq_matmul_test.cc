// int8 matrix products of the QDQ format (src/backend/lower/fused/int8_qdq_matmul.cc):
// DequantizeLinear -> MatMul (DequantizeLinear int8 weights, per column)
// -> Add bias [-> Relu] -> QuantizeLinear lowered in fused mode as one oneDNN
// int8 matmul with the bias and Relu as post-ops, against the unfused plan,
// which runs the ONNX definition (host steps for QuantizeLinear and
// DequantizeLinear around a float product): at most one step of y's scale
// apart, where a float32 result lies at a rounding boundary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/lower/core/onednn_limits.h"
#include "backend/runtime/executor.h"
#include "ir/varying_dims.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

struct Case {
  std::string name;
  std::vector<std::int64_t> x_dims = {1, 12, 24};  // [..., M, K]
  int columns = 20;                                 // N
  std::string src_type = "uint8";
  int src_zero = 128;
  int weight_max = 64;
  bool relu = true;
};

std::string List(const std::vector<std::string>& values) {
  std::string s;
  for (const std::string& v : values) s += (s.empty() ? "" : ", ") + v;
  return s;
}

std::string ModelText(const Case& c, const std::string& x_type, const std::string& y_type) {
  const std::int64_t k = c.x_dims.back();
  std::vector<std::string> w, ws, b;
  for (std::int64_t i = 0; i < k * c.columns; ++i)
    w.push_back(std::to_string((i * 37 + 11) % (2 * c.weight_max + 1) - c.weight_max));
  for (int n = 0; n < c.columns; ++n) {
    ws.push_back(std::to_string(0.002f * static_cast<float>(1 + n % 5)));
    b.push_back(std::to_string(0.01f * static_cast<float>((n * 53) % 41 - 20)));
  }
  std::ostringstream text;
  text << R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float)" << x_type << R"( x) => (float)" << y_type << R"( y) {
      sx = Constant <value = float {0.05}> ()
      zx = Constant <value = )" << c.src_type << " {" << c.src_zero << R"(}> ()
      wq = Constant <value = int8[)" << k << "," << c.columns << "] {" << List(w) << R"(}> ()
      ws = Constant <value = float[)" << c.columns << "] {" << List(ws) << R"(}> ()
      bias = Constant <value = float[)" << c.columns << "] {" << List(b) << R"(}> ()
      sy = Constant <value = float {0.03}> ()
      zy = Constant <value = uint8 {10}> ()
      xq = QuantizeLinear (x, sx, zx)
      xd = DequantizeLinear (xq, sx, zx)
      wd = DequantizeLinear <axis = 1> (wq, ws)
      m = MatMul (xd, wd)
      a = Add (m, bias)
)";
  text << (c.relu ? "      r = Relu (a)\n" : "      r = Identity (a)\n");
  text << "      yq = QuantizeLinear (r, sy, zy)\n      y = DequantizeLinear (yq, sy, zy)\n    }";
  return text.str();
}

int Int8MatMuls(const std::vector<ScheduleStep>& schedule) {
  return static_cast<int>(std::count_if(schedule.begin(), schedule.end(), [](const ScheduleStep& s) {
    return s.kind == "matmul" && (s.data_type == "u8" || s.data_type == "s8");
  }));
}

void CheckCase(const Case& c) {
  INFO(c.name);
  std::vector<std::int64_t> y_dims = c.x_dims;
  y_dims.back() = c.columns;
  Graph graph = test::GraphFromText(ModelText(c, "[" + test::DimsText(c.x_dims) + "]", "[" + test::DimsText(y_dims) + "]"));
  const Tensor x = test::TensorFrom(c.x_dims, [](std::int64_t i) { return 4.0f * test::Wave(i * 7 + 3); });
  const test::PlanRun fused = test::RunPlan(graph, true, {x});
  const test::PlanRun unfused = test::RunPlan(graph, false, {x});
  INFO(test::StepList(fused));
  const bool int8 = backend::HasInt8DotProduct() || (c.weight_max <= 64 && c.src_type == "uint8");
  CHECK(Int8MatMuls(fused.schedule) == (int8 ? 1 : 0));
  CHECK(test::StepsStartingWith(fused, "host ") == 0);
  // A float product says why it is not int8 (run prints it, run --json gives it).
  const bool noted = std::any_of(fused.schedule.begin(), fused.schedule.end(), [](const ScheduleStep& s) {
    return s.kind == "matmul" && s.note.rfind("float, not int8: ", 0) == 0;
  });
  CHECK(noted == !int8);
  test::RequireWithinOneStep(fused.outputs.at(0).data, unfused.outputs.at(0).data, 0.03f);
}

}  // namespace

TEST_CASE("a QDQ MatMul with its bias and Relu runs as one int8 matmul, within a step of the definition",
          "[quantize][int8]") {
  CheckCase({"3-D, uint8, 7-bit weights"});
  CheckCase({"2-D, uint8, 7-bit weights", {10, 24}, 17});
  CheckCase({"4-D, no Relu", {2, 3, 5, 16}, 33, "uint8", 128, 64, false});
  CheckCase({"8-bit weights: int8 only with VNNI", {1, 12, 24}, 20, "uint8", 128, 127});
  CheckCase({"an int8 source: only with VNNI", {1, 12, 24}, 20, "int8", 3, 64});
}

TEST_CASE("a QDQ MatMul whose rows vary between a session's shapes stays a float product", "[quantize][int8]") {
  const Case c{"rows vary"};
  const std::string text = ModelText(c, "[1,S,24]", "[1,S,20]");
  const auto varying = std::make_shared<const VaryingDims>(VaryingDimsOf(test::GraphFromText(text)));
  LoadOptions at;
  at.input_shapes = {{"x", {1, 7, 24}}};
  const Graph graph = test::GraphFromText(text, at);
  CompileOptions options;
  options.varying_dims = varying;
  ExecutablePlan plan = ExecutablePlan::Compile(graph, test::FusePostdom(graph), options);
  const std::vector<ScheduleStep> schedule = plan.Schedule();
  INFO(test::StepList({{}, plan.stats(), schedule, plan.Describe()}));
  CHECK(Int8MatMuls(schedule) == 0);
  CHECK(std::count_if(schedule.begin(), schedule.end(), [](const ScheduleStep& s) {
          return s.kind == "matmul" && s.note.find("its rows vary between the session's shapes") != std::string::npos;
        }) == 1);
}
