// Binary, variadic and Clip primitives (src/backend/lower/ops/binary.cc): binary ops
// as anchors of their own with operands broadcast against channel-blocked
// tensors, a constant or broadcast first operand of Sub and Div, rank-0
// operands (with Log, src/backend/lower/ops/std_math.cc, after them); Max, Min,
// Sum and Mean of broadcast inputs; Clip with run-time bounds; a binary chain
// split where its post-op would run the reference kernel. Numbers are
// checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/lower/core/builder.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CompileError;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

// x [1,1,S,S,S] -> ConvTranspose 1x1x1 to 2 channels (a channel-blocked result)
// -> GlobalAveragePool (keeps the blocking) -> `op` with a one-element constant.
std::string PooledDeconv(int s, const std::string& op) {
  const std::string d = std::to_string(s);
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
         "g (float[1,1," + d + "," + d + "," + d + "] x, float[1,2,1,1,1] w = {0.5, -0.75}, float k = {2.0})"
         " => (float[1,2,1,1,1] y) {\n  t = ConvTranspose (x, w)\n  p = GlobalAveragePool (t)\n  y = " + op +
         " (p, k)\n}";
}

}  // namespace

TEST_CASE("a one-element operand of a binary op on channel-blocked data is read plain", "[lower_ops]") {
  // oneDNN 2.6.3's jit:uni binary gets a channel-blocked operand broadcast
  // along channels wrong (adds nothing): before the fix y was p, not p + 2.
  for (int s : {1, 3})
    for (const std::string op : {"Add", "Mul", "Sub", "Div"}) {
      INFO(op << " at spatial size " << s);
      Graph graph = test::GraphFromText(PooledDeconv(s, op));
      Tensor x = test::TensorFrom(graph.value(graph.inputs()[0]).type.dims, [](std::int64_t i) { return 1.f + test::Wave(i); });
      test::CheckFusedAgainstUnfused(graph, {x}, 1e-6);
    }
}

TEST_CASE("a run-time operand of lower rank is broadcast from its plain form", "[lower_ops]") {
  // A scalar graph input added to a channel-blocked ConvTranspose result, in
  // a step of its own (t is also an output, so the Add is no post-op): a
  // reorder into the blocked 3-D layout cannot add the scalar's leading 1s
  // (an internal error before; found by the differential tester).
  // With one element in all (x [1,1,1]) the operand has the result's dims once expanded.
  for (const std::string width : {"1", "3"})
    for (const std::string& scalar : {std::string("float k"), std::string("float[1] k"), std::string("float[1,1] k")}) {
      INFO(scalar << ", width " << width);
      const std::string dims = "[1,1," + width + "]";
      Graph graph = test::GraphFromText("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                                        "g (float" + dims + " x, " + scalar + ", float[1,1,1] w = {0.5}) => (float" + dims +
                                        " y, float" + dims + " t) {\n  t = ConvTranspose (x, w)\n  y = Add (t, k)\n}");
      test::CheckFusedAgainstUnfused(graph, RandomInputs(graph), 1e-6);
    }
}

TEST_CASE("a Sub of two scalars keeps rank 0, Log is exact where oneDNN's eltwise_log is not", "[backend_ops]") {
  // Before, the Sub's result took the shape [1] and compiling failed against
  // the inferred [] (ONNX node test test_range_float_type_positive_delta_expanded).
  const char* scalars = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float a, float b) => (float d) {
      d = Sub (a, b)
    })";
  PlanRun run = CheckBoth(scalars, {TensorFrom({}, [](auto) { return 7.5f; }, "a"), TensorFrom({}, [](auto) { return 2.25f; }, "b")},
                          {5.25});
  CHECK(run.outputs[0].dims.empty());
  // oneDNN 2.6's eltwise_log gives log(1) = -1.43e-6 (test_log_example wants
  // 0 within 1e-7): Log runs as std::log, also after a Conv's layout.
  const char* logs = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,2] x, float[2,2,1,1] w = {1, 0, 0, 1}) => (float[1,2,2,2] y) {
      c = Conv (x, w)
      y = Log (c)
    })";
  const std::vector<float> values = {1.0f, 2.718281828f, 0.5f, 3.0f, 1.0f, 0.125f, 10.0f, 1e-3f};
  std::vector<double> expected;
  for (float v : values) expected.push_back(std::log(static_cast<double>(v)));
  CheckBoth(logs, {TensorFrom({1, 2, 2, 2}, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; })}, expected,
            2e-7);
}

TEST_CASE("Max, Min, Sum and Mean of broadcast inputs, the full-shaped one not first", "[backend_ops]") {
  Tensor a = TensorFrom({3}, [](std::int64_t i) { return 0.5f * static_cast<float>(i) - 0.4f; }, "a");
  Tensor b = TensorFrom({2, 3}, Wave, "b");
  const float c[3] = {0.25f, -0.75f, 0.1f};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    INFO(op);
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[3] a, float[2,3] b, float[1,3] c = {0.25, -0.75, 0.1}) => (float[2,3] y) {
        y = )") + op + R"( (a, b, c)
      })";
    std::vector<double> y;
    for (std::size_t i = 0; i < 6; ++i) {
      const double x0 = a.data[i % 3], x1 = b.data[i], x2 = c[i % 3];
      const std::string o = op;
      y.push_back(o == "Max"   ? std::max({x0, x1, x2})
                  : o == "Min" ? std::min({x0, x1, x2})
                  : o == "Sum" ? x0 + x1 + x2
                               : (x0 + x1 + x2) / 3);
    }
    CheckBoth(text, {a, b}, y, 1e-6);
  }
  const char* single = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] b) => (float[2,3] y) {
      y = Mean (b)
    })";
  const PlanRun one = CheckBoth(single, {b}, std::vector<double>(b.data.begin(), b.data.end()), 0);
  CHECK(one.stats.kernels == 0);  // the input itself, as Identity
  // Two inputs that both broadcast: the broadcast kernel (broadcast_binary.h)
  // takes them; more than two stay refused by oneDNN's binary.
  const Tensor col = test::TensorOf("a", {2, 1}, {0.5f, -1.f}), row = test::TensorOf("b", {1, 3}, {-2.f, 0.f, 3.f});
  const PlanRun outer = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1] a, float[1,3] b) => (float[2,3] y) {
      y = Max (a, b)
    })", {col, row}, {0.5, 0.5, 3, -1, 0, 3}, 0);
  CHECK(test::StepsContaining(outer, "onnxfuse:broadcast_binary") == 1);
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1] a, float[1,3] b, float[1,3] c) => (float[2,3] y) {
      y = Max (a, b, c)
    })"), Catch::Matchers::Contains("no run-time input has the output's shape"));
}

TEST_CASE("Clip with bounds computed at run time: either bound alone, and min above max", "[backend_ops]") {
  Tensor x = TensorFrom({2, 6}, Wave);
  auto scalar = [](float v, const char* name) { return TensorFrom({}, [v](auto) { return v; }, name); };
  auto clipped = [&](double lo, double hi) {
    std::vector<double> y;
    for (float v : x.data) y.push_back(std::min(std::max(static_cast<double>(v), lo), hi));
    return y;
  };
  const char* both = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float lo, float hi) => (float[2,6] y) {
      y = Clip (x, lo, hi)
    })";
  CheckBoth(both, {x, scalar(-0.3f, "lo"), scalar(0.2f, "hi")}, clipped(-0.3f, 0.2f), 0);
  CheckBoth(both, {x, scalar(0.4f, "lo"), scalar(-0.1f, "hi")}, clipped(0.4f, -0.1f), 0);  // all max
  const char* min_only = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float lo) => (float[2,6] y) {
      y = Clip (x, lo)
    })";
  CheckBoth(min_only, {x, scalar(0.1f, "lo")}, clipped(0.1f, INFINITY), 0);
  const char* max_only = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float hi) => (float[2,6] y) {
      y = Clip (x, , hi)
    })";
  CheckBoth(max_only, {x, scalar(-0.2f, "hi")}, clipped(-INFINITY, -0.2f), 0);
}

TEST_CASE("Sub and Div whose first input is a constant or a broadcast tensor: operands swapped, result negated or inverted",
          "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.25f * static_cast<float>(i); });
  Tensor a = TensorFrom({3}, [](std::int64_t i) { return 1.f - static_cast<float>(i); }, "a");
  std::vector<double> y;
  for (std::size_t i = 0; i < 6; ++i) y.push_back(std::max(0.0, 1.0 - x.data[i]));
  PlanRun sub = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float one = {1.0}) => (float[2,3] y) {
      d = Sub (one, x)
      y = Relu (d)
    })",
                          {x}, y, 1e-6);
  CHECK(sub.stats.kernels == 1);  // the negation and the Relu are post-ops of the one binary step
  y.clear();
  for (std::size_t i = 0; i < 6; ++i) y.push_back(a.data[i % 3] / x.data[i]);
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] a) => (float[2,3] y) {
      y = Div (a, x)
    })",
            {x, a}, y, 1e-6);
}

TEST_CASE("a binary chain whose full-size operand is in another layout than its src0 splits off the reference kernel",
          "[lower_ops]") {
  // A GRU update as in RAFT: z = Sigmoid(Conv(x)) read twice (its chain ends
  // there, in the convolution's layout), h = Tanh(hx) plain; (1 - z) * h as one
  // binary with a binary_mul post-op on h ran oneDNN's ref:any.
  std::string weights;
  for (int o = 0; o < 8; ++o)
    for (int i = 0; i < 8; ++i) weights += std::string(weights.empty() ? "" : ", ") + (o == i ? "0.5" : "0.0");
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                           "g (float[1,8,4,4] x, float[1,8,4,4] hx, float[8,8,1,1] w = {" + weights +
                           "}, float one = {1.0}) => (float[1,8,4,4] y) {\n"
                           "  c = Conv (x, w)\n"
                           "  z = Sigmoid (c)\n"
                           "  h = Tanh (hx)\n"
                           "  s = Sub (one, z)\n"
                           "  u = Mul (s, h)\n"
                           "  v = Mul (z, x)\n"
                           "  y = Add (u, v)\n"
                           "}";
  const Tensor x = TensorFrom({1, 8, 4, 4}, Wave, "x");
  const Tensor hx = TensorFrom({1, 8, 4, 4}, [](std::int64_t i) { return Wave(i + 3) * 2.f; }, "hx");
  std::vector<double> want;
  for (std::size_t i = 0; i < x.data.size(); ++i) {
    const double z = 1 / (1 + std::exp(-0.5 * x.data[i]));
    want.push_back((1 - z) * std::tanh(static_cast<double>(hx.data[i])) + z * x.data[i]);
  }
  const PlanRun fused = CheckBoth(text, {x, hx}, want, 1e-5);
  for (const ScheduleStep& step : fused.schedule) {
    INFO(step.kind << " " << step.label << " " << step.impl);
    CHECK_FALSE(backend::IsSlowImpl(step.kind, step.impl));
  }
}

TEST_CASE("a binary of a channels-last src0 and an operand oneDNN broadcasts only on its reference kernel runs on ours",
          "[lower_ops]") {
  // c = Conv(x, I) is channels-last (24 channels) and read twice, so Mul
  // starts a chain of its own: oneDNN 2.6's binary of a channels-last src0
  // and a plain [2,24,5,1] operand is ref:any. OneDnnBinaryIsSlow asks oneDNN
  // with the layouts EmitBinary would use.
  std::string w;
  for (int o = 0; o < 24; ++o)
    for (int i = 0; i < 24; ++i) w += std::string(w.empty() ? "" : ", ") + (o == i ? "1.0" : "0.0");
  std::string k;
  std::vector<double> kv;
  for (int i = 0; i < 2 * 24 * 5; ++i) {
    kv.push_back(0.5 + 0.25 * (i % 7));
    k += std::string(k.empty() ? "" : ", ") + std::to_string(kv.back());
  }
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                           "g (float[2,24,5,7] x, float[24,24,1,1] w = {" + w + "}, float[2,24,5,1] k = {" + k +
                           "}) => (float[2,24,5,7] y, float[2,24,5,7] r) {\n"
                           "  c = Conv (x, w)\n  y = Mul (c, k)\n  r = Relu (c)\n}";
  const Tensor x = TensorFrom({2, 24, 5, 7}, [](std::int64_t i) { return Wave(3 * i); });
  std::vector<double> y;
  for (std::size_t i = 0; i < x.data.size(); ++i) y.push_back(double{x.data[i]} * kv[i / 7]);
  const PlanRun fused = CheckBoth(text, {x}, y, 1e-6);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
  CHECK(test::StepsContaining(fused, "binary Mul_1 onnxfuse:broadcast_binary") == 1);
}
