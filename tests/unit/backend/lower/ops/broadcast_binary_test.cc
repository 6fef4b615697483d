// LowerBroadcastBinary (src/backend/lower/ops/broadcast_binary.cc): Add, Sub, Mul,
// Div and two-input Max whose operands both broadcast run as one "binary" step of our own,
// not as a host step, in either operand order and with a constant operand;
// a binary with a full-shape operand stays on oneDNN, except Max and Min,
// which keep NaN, and a broadcast oneDNN runs only on its reference kernel
// (OneDnnBinaryIsSlow) or whose dims vary between the shapes a session
// compiles (BinaryRunsOnOwnKernel). Expected values are computed in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "ir/varying_dims.h"
#include "load/loader.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::PlanRun;
using test::TensorOf;

TEST_CASE("a binary whose operands both broadcast is one broadcast_binary step, in either operand order",
          "[broadcast_binary]") {
  // d [3,1,2] (computed) against a constant grid g [1,2,2]: RAFT's offsets.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,1,2] x, float[1,2,2] grid = {0.5, -1.0, 2.0, 4.0}) => (float[3,2,2] s, float[3,2,2] q, float[3,2,2] m) {
      d = Relu (x)
      s = Sub (grid, d)
      q = Div (d, grid)
      m = Max (grid, d)
    })";
  const std::vector<float> x = {1, -2, 3, 4, -5, 6};
  const double grid[4] = {0.5, -1.0, 2.0, 4.0};
  std::vector<double> want_s, want_q, want_m;
  for (int n = 0; n < 3; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w) {
        const double d = std::max(0.f, x[static_cast<std::size_t>(n * 2 + w)]);
        want_s.push_back(grid[h * 2 + w] - d);
        want_q.push_back(d / grid[h * 2 + w]);
        want_m.push_back(std::max(d, grid[h * 2 + w]));
      }
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse, {TensorOf("x", {3, 1, 2}, x)});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], want_s);
    test::CheckClose(run.outputs[1], want_q);
    test::CheckClose(run.outputs[2], want_m);
    CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 3);
    CHECK(test::StepsStartingWith(run, "host ") == 0);
  }
}

TEST_CASE("a binary with an operand of the output's shape stays on oneDNN's binary", "[broadcast_binary]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3] b = {1.0, 2.0, 3.0}) => (float[2,3] y) {
      y = Mul (x, b)
    })";
  PlanRun run = test::RunPlan(test::GraphFromText(text), true, {TensorOf("x", {2, 3}, {1, 2, 3, 4, 5, 6})});
  INFO(test::StepList(run));
  test::CheckClose(run.outputs[0], {1, 4, 9, 4, 10, 18});
  CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 0);
}

TEST_CASE("a per-row mean and scale of a plain [3,H,W] image run here, not on oneDNN's reference binary",
          "[broadcast_binary]") {
  // torchvision detectors' transform: (image - mean[3,1,1]) / std[3,1,1].
  // oneDNN 2.6's binary runs this broadcast only on ref:any (44 ms at 320x320).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,8,8] x, float[3,1,1] mean = {0.5, 0.25, -1.0}, float[3,1,1] sd = {2.0, 0.5, 4.0}) => (float[3,8,8] y) {
      c = Sub (x, mean)
      y = Div (c, sd)
    })";
  std::vector<float> x(3 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  const double mean[3] = {0.5, 0.25, -1.0}, sd[3] = {2.0, 0.5, 4.0};
  std::vector<double> want;
  for (std::size_t i = 0; i < x.size(); ++i) want.push_back((x[i] - mean[i / 64]) / sd[i / 64]);
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse, {TensorOf("x", {3, 8, 8}, x)});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], want);
    CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 2);
    CHECK(test::StepsContaining(run, "ref:") == 0);
  }
}

TEST_CASE("Max and Min keep NaN in either operand, with or without an operand of the output's shape",
          "[broadcast_binary]") {
  // As ONNX Runtime and numpy.maximum: oneDNN's binary_max returns its second
  // operand where the first is NaN, so these run on our kernel.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[2,3] z, float[3] b = {0.0, 2.0, 3.0}) => (float[2,3] m, float[2,3] n, float[2,3] p, float[2,3] q) {
      m = Max (x, b)
      n = Min (b, x)
      p = Max (x, z)
      q = Min (z, x)
    })";
  const Tensor x = TensorOf("x", {2, 3}, {nan, 1, 5, -inf, nan, 2}), z = TensorOf("z", {2, 3}, {1, nan, 0, 1, 2, nan});
  const double b[3] = {0, 2, 3};
  for (bool fuse : {false, true}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse, {x, z});
    INFO(test::StepList(run));
    CHECK(test::StepsContaining(run, "onnxfuse:broadcast_binary") == 4);
    for (std::size_t i = 0; i < 6; ++i) {
      const double xi = x.data[i], zi = z.data[i], bi = b[i % 3];
      const auto same = [](float got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; };
      INFO("element " << i);
      CHECK(same(run.outputs[0].data[i], std::isnan(xi) ? xi : std::max(xi, bi)));
      CHECK(same(run.outputs[1].data[i], std::isnan(xi) ? xi : std::min(xi, bi)));
      CHECK(same(run.outputs[2].data[i], std::isnan(xi) || std::isnan(zi) ? NAN : std::max(xi, zi)));
      CHECK(same(run.outputs[3].data[i], std::isnan(xi) || std::isnan(zi) ? NAN : std::min(xi, zi)));
    }
  }
}

// Compiled with a session's varying dims (the symbolic S), an Add of two
// activations of the output's dims, and the Transpose's view made plain for
// the graph output, take no kernel generated for one shape: our binary and
// our StridedCopy, whose extents are data. Every shape gives the values
// computed in double.
TEST_CASE("a binary and a layout copy whose dims vary between compiled shapes run on our own kernels",
          "[broadcast_binary]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S,4,3] x, float[1,S,4,3] z) => (float[1,4,S,3] y) {
      s = Add (x, z)
      y = Transpose <perm = [0, 2, 1, 3]> (s)
    })";
  const auto varying = std::make_shared<const VaryingDims>(VaryingDimsOf(test::GraphFromText(text)));
  for (std::int64_t s : {2, 6, 19}) {
    INFO("S = " << s);
    LoadOptions at;
    at.input_shapes = {{"x", {1, s, 4, 3}}, {"z", {1, s, 4, 3}}};
    const Graph graph = test::GraphFromText(text, at);
    const Tensor x = test::TensorFrom({1, s, 4, 3}, [](std::int64_t i) { return test::Wave(i * 3 + 1); }, "x");
    const Tensor z = test::TensorFrom({1, s, 4, 3}, [](std::int64_t i) { return test::Wave(i * 5 + 2); }, "z");
    CompileOptions options;
    options.varying_dims = varying;
    ExecutablePlan plan = ExecutablePlan::Compile(graph, test::FusePostdom(graph), options);
    const std::vector<ScheduleStep> schedule = plan.Schedule();
    INFO(test::StepList({{}, plan.stats(), schedule, plan.Describe()}));
    const auto count = [&](const std::string& impl) {
      return std::count_if(schedule.begin(), schedule.end(), [&](const ScheduleStep& st) { return st.impl == impl; });
    };
    CHECK(count("onnxfuse:broadcast_binary") == 1);
    CHECK(count("onnxfuse:strided_copy") == 1);
    for (const ScheduleStep& st : schedule) CHECK(st.impl.find("jit") == std::string::npos);
    const std::vector<Tensor> out = plan.Run({x, z});
    std::vector<double> want;
    for (std::int64_t h = 0; h < 4; ++h)
      for (std::int64_t t = 0; t < s; ++t)
        for (std::int64_t c = 0; c < 3; ++c) {
          const std::size_t i = static_cast<std::size_t>((t * 4 + h) * 3 + c);
          want.push_back(double(x.data[i]) + double(z.data[i]));
        }
    test::CheckClose(out.at(0), want);
  }
}
