// Host steps (src/backend/lower/core/host_step.cc): integer and bool tensors
// computed at run time, graph inputs and outputs of every element type, each
// result narrowed to its ONNX type; and their refusals. Expected values are
// worked out by hand from the ONNX operator spec.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "fuse/fusion_plan.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::IntTensorOf;
using test::PlanRun;
using test::RunPlan;
using test::TensorOf;

namespace {

// A tensor of ONNX type `type` held as int64 (every integer type and BOOL).
Tensor Typed(const std::string& name, std::vector<std::int64_t> dims, std::vector<std::int64_t> values,
             std::int32_t type) {
  Tensor t = IntTensorOf(name, std::move(dims), std::move(values));
  t.data_type = type;
  return t;
}

// Runs `text` fused and unfused; both runs' outputs, fused first.
std::vector<PlanRun> RunBoth(const std::string& text, const std::vector<Tensor>& inputs) {
  Graph graph = test::GraphFromText(text);
  return {RunPlan(graph, true, inputs), RunPlan(graph, false, inputs)};
}

}  // namespace

TEST_CASE("int64 graph inputs are computed at run time by host steps and given back as int64", "[host_step]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[4] a, int64[4] b) => (int64[4] y) {
      s = Add (a, b)
      y = Mul (s, a)
    })";
  for (const PlanRun& run : RunBoth(text, {IntTensorOf("a", {4}, {1, -2, 3, 40}), IntTensorOf("b", {4}, {5, 6, -7, 2})})) {
    INFO(test::StepList(run));
    CHECK(run.outputs[0].DataType() == onnx::TensorProto::INT64);
    CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{6, -8, -12, 1680});
    CHECK(test::StepsStartingWith(run, "host ") == 2);
  }
}

TEST_CASE("a float mask from a comparison selects with Where: bool in the middle, float32 out", "[host_step]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[1] zero = {0.0}, float[1] fill = {-9.0}) => (float[2,3] y) {
      m = Greater (x, zero)
      w = Where (m, x, fill)
      y = Relu (w)
    })";
  Tensor x = TensorOf("x", {2, 3}, {1.5f, -2.f, 0.f, 3.f, -0.5f, 7.f});
  for (const PlanRun& run : RunBoth(text, {x})) {
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], {1.5, 0, 0, 3, 0, 7});
  }
}

TEST_CASE("results are narrowed to their ONNX type: int32 wraps, uint8 casts wrap, bool is 0 or 1, float16 rounds",
          "[host_step]") {
  const std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
  // int32 arithmetic wraps at 32 bits, as the type does (two's complement).
  auto wrap = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int32[2] a, int32[2] b) => (int32[2] y) { y = Add (a, b) })",
                      {Typed("a", {2}, {int32_max, -5}, onnx::TensorProto::INT32),
                       Typed("b", {2}, {1, 2}, onnx::TensorProto::INT32)});
  for (const PlanRun& run : wrap) {
    CHECK(run.outputs[0].DataType() == onnx::TensorProto::INT32);
    CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{std::numeric_limits<std::int32_t>::min(), -3});
  }
  // Cast float -> uint8 truncates toward zero, then wraps modulo 256; -> bool is x != 0
  // (0.25 and -0.25 are true: not truncated first, which the difftest's seed 5075 found);
  // -> float16 rounds to the nearest half: 1 + 2^-12 is 1, 1 + 3 * 2^-11 is 1 + 2^-9.
  auto casts = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5] x) => (uint8[5] u, bool[5] t, float16[5] h) {
      u = Cast <to = 2> (x)
      t = Cast <to = 9> (x)
      h = Cast <to = 10> (x)
    })",
                       {TensorOf("x", {5}, {300.7f, 0.f, 1.f + 1.f / 4096, 0.25f, -0.25f})});
  for (const PlanRun& run : casts) {
    INFO(test::StepList(run));
    CHECK(run.outputs[0].DataType() == onnx::TensorProto::UINT8);
    CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{44, 0, 1, 0, 0});
    CHECK(run.outputs[1].DataType() == onnx::TensorProto::BOOL);
    CHECK(run.outputs[1].int_data == std::vector<std::int64_t>{1, 0, 1, 1, 1});
    CHECK(run.outputs[2].DataType() == onnx::TensorProto::FLOAT16);
    CHECK(run.outputs[2].data == std::vector<float>{300.75f, 0.f, 1.f, 0.25f, -0.25f});
  }
}

TEST_CASE("bool graph inputs feed logic ops, and run-time int64 indices Gather rows of a constant table",
          "[host_step]") {
  auto logic = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (bool[4] p, bool[4] q) => (bool[4] y) {
      n = Not (q)
      y = And (p, n)
    })",
                       {Typed("p", {4}, {1, 1, 0, 0}, onnx::TensorProto::BOOL),
                        Typed("q", {4}, {1, 0, 1, 0}, onnx::TensorProto::BOOL)});
  for (const PlanRun& run : logic) CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{0, 1, 0, 0});

  auto gather = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[3] ids, float[3,2] table = {10, 11, 20, 21, 30, 31}) => (float[3,2] y) {
      e = Gather (table, ids)
      y = Relu (e)
    })",
                        {IntTensorOf("ids", {3}, {2, 0, 2})});
  for (const PlanRun& run : gather) test::CheckClose(run.outputs[0], {30, 31, 10, 11, 30, 31});
}

TEST_CASE("host steps are refused when an output's shape depends on run-time values, or its type has no storage",
          "[host_step]") {
  CHECK_THAT(test::CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64 n) => (int64[N] y) {
      zero = Constant <value = int64 {0}> ()
      one = Constant <value = int64 {1}> ()
      y = Range (zero, n, one)
    })"),
             Catch::Matchers::Contains("node 'Range_2' (Range): the shape of output 'y' is not known at build time"));
  CHECK_THAT(test::CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (string[2] y) { y = Cast <to = 8> (x) })"),
             Catch::Matchers::Contains("output 'y' has element type 8"));
}

TEST_CASE("a graph input of the wrong element type is a usage error naming both types", "[host_step]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int32[2] a) => (int32[2] y) { y = Neg (a) })");
  ExecutablePlan plan = ExecutablePlan::Compile(graph, FusionPlan{}, CompileOptions{false});
  auto e = test::ErrorOf([&] { plan.Run({TensorOf("a", {2}, {1.f, 2.f})}); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK(e.message == "input 'a' must be INT32 [2], got FLOAT [2] (set its shape with --input-shape)");
  CHECK(plan.Run({Typed("a", {2}, {1, -2}, onnx::TensorProto::INT32)})[0].int_data == std::vector<std::int64_t>{-1, 2});
}

TEST_CASE("a float16 model runs in float32: its float16 weights converted at build time, its input cast to half",
          "[host_step]") {
  // x (float32) -> Cast to float16 (rounded to half by a host step) -> Conv
  // 1x1 with float16 weights (a Cast folded at build time: the text parser
  // takes no float16 initializers) -> Relu -> Cast to float32. The weights
  // 0.5, -0.25 are exact halves; 1 + 2^-12 rounds to 1 in half precision, and
  // 3 + 2^-10, halfway between 3 and 3 + 2^-9, to 3 (ties to even).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,1,2] x, float[1,2,1,1] w32 = {0.5, -0.25}) => (float[1,1,1,2] y) {
      w = Cast <to = 10> (w32)
      h = Cast <to = 10> (x)
      c = Conv (h, w)
      r = Relu (c)
      y = Cast <to = 1> (r)
    })";
  const float tiny = 1.f / 4096, small = 1.f / 1024;
  Tensor x = TensorOf("x", {1, 2, 1, 2}, {1.f + tiny, 3.f + small, 1.f, -8.f});
  for (const PlanRun& run : RunBoth(text, {x})) {
    INFO(test::StepList(run));
    CHECK(run.outputs[0].DataType() == onnx::TensorProto::FLOAT);
    // 0.5 * 1 - 0.25 * 1 = 0.25; 0.5 * 3 - 0.25 * -8 = 3.5
    test::CheckClose(run.outputs[0], {0.25, 3.5}, 1e-7);
  }
}

TEST_CASE("reflect and edge Pad of an activation, and pads computed at run time, run as host steps", "[host_step]") {
  // torch's ReflectionPad2d / ReplicationPad2d: pads [0, 0, 0, 1, 0, 0, 0, 1] on [1, 1, 2, 3].
  const Tensor x = TensorOf("x", {1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto text = [](const std::string& mode) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,1,2,3] x, int64[8] p = {0, 0, 0, 1, 0, 0, 0, 1}) => (float[1,1,2,5] y) {
        r = Relu (x)
        y = Pad <mode = ")" + mode + R"("> (r, p)
      })";
  };
  for (const PlanRun& run : RunBoth(text("reflect"), {x})) {
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], {2, 1, 2, 3, 2, 5, 4, 5, 6, 5});
    CHECK(test::StepsStartingWith(run, "host ") == 1);
  }
  for (const PlanRun& run : RunBoth(text("edge"), {x})) test::CheckClose(run.outputs[0], {1, 1, 2, 3, 3, 4, 4, 5, 6, 6});
  // The pads a graph input: the output's shape is declared, so the step is built for it.
  auto runtime = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x, int64[4] p) => (float[2,4] y) { y = Pad (x, p) })",
                         {TensorOf("x", {1, 3}, {1, 2, 3}), IntTensorOf("p", {4}, {1, 0, 0, 1})});
  for (const PlanRun& run : runtime) test::CheckClose(run.outputs[0], {0, 0, 0, 0, 1, 2, 3, 0});
}

TEST_CASE("an output shape inference left open follows from the inputs' dims: evaluated once on zeros at build time",
          "[host_step]") {
  // Symbolic input dims are taken as 1 (no --input-shape), so shape inference
  // knows no output dims: the Concat of indices and TopK's outputs get theirs
  // from an evaluation on zeros of the inputs' dims; NonZero's follow its
  // values and stay refused.
  auto runs = RunBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[N] a, float[M] x) => (int64[K] c, float[J] v, int64[J] i) {
      c = Concat <axis = 0> (a, a)
      one = Constant <value = int64[1] {1}> ()
      v, i = TopK (x, one)
    })",
                      {IntTensorOf("a", {1}, {3}), TensorOf("x", {1}, {-2.5f})});
  for (const PlanRun& run : runs) {
    INFO(test::StepList(run));
    CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{3, 3});
    CHECK(run.outputs[1].data == std::vector<float>{-2.5f});
    CHECK(run.outputs[2].int_data == std::vector<std::int64_t>{0});
  }
  CHECK_THAT(test::CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (int64[1,K] y) { y = NonZero (x) })"),
             Catch::Matchers::Contains("node 'NonZero_0' (NonZero): the shape of output 'y' is not known at build time"));
}

TEST_CASE("Shape of a value an open chain computes folds at build time: the sizes it steers are no host steps",
          "[host_step]") {
  // RAFT's upsampling: Resize(x, sizes = Concat(Shape(a + b)[0:2], constant))
  // where a + b is a chain in the Shape's fusion group (a Conv and its
  // residual Add), and shape inference lost the batch dim (here: symbolic,
  // taken as 1). The Shape used to become a host step, then the sizes a
  // run-time value, and the Resize was refused.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,2,2,2] x, float[2,2,1,1] w = {1, 0, 0, 1}) => (float[N,2,4,4] y) {
      c = Conv (x, w)
      a = Add (c, x)
      s = Shape (a)
      st = Constant <value = int64[1] {0}> ()
      en = Constant <value = int64[1] {2}> ()
      hw = Constant <value = int64[2] {4, 4}> ()
      nc = Slice (s, st, en)
      sizes = Concat <axis = 0> (nc, hw)
      y = Resize <mode = "nearest"> (a, , , sizes)
    })";
  Tensor x = TensorOf("x", {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // The whole graph one fusion group, as RAFT's post-dominator groups put the
  // Shape with the chain.
  Graph graph = test::GraphFromText(text);
  const FusionPlan one_group = MakeFusionPlan(graph, std::vector<OpPatternKind>(graph.num_nodes(), OpPatternKind::kOpaque),
                                              std::vector<int>(graph.num_nodes(), 0), {"test"}, "test");
  ExecutablePlan plan = ExecutablePlan::Compile(graph, one_group);
  std::string steps;
  for (const std::string& line : plan.Describe()) steps += line + "\n";
  INFO(steps);
  CHECK(steps.find("host ") == std::string::npos);
  const std::vector<Tensor> y = plan.Run({x});
  // a = 2x; nearest upsampling by 2 repeats each pixel in a 2x2 block.
  CHECK(y[0].data[0] == 2.f);
  CHECK(y[0].data[1] == 2.f);
  CHECK(y[0].data[2] == 4.f);
  CHECK(y[0].data[16] == 10.f);
}
