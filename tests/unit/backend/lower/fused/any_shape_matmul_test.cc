// Products whose dims change between the shapes a session compiles
// (src/backend/lower/fused/any_shape_matmul.h; on AVX2 our own GEMM where the
// rows of a product with constant weights vary: own_kernels/own_gemm.cc;
// the binary after a product, chain_emit.cc):
// compiled with the varying dims of the model's symbolic graph, an
// attention's two products are matmuls made with run-time dims, the
// projection on one too (AVX-512) or our own GEMM (AVX2), and every shape gives the unfused plan's
// outputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "backend/kernels/gemm.h"
#include "backend/lower/fused/any_shape_matmul.h"
#include "backend/runtime/executor.h"
#include "ir/varying_dims.h"
#include "load/loader.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// One head pair of attention over S tokens of 16 features: a projection by
// constant weights, scores Q Q^T scaled and masked, softmax, the weighted sum.
std::string Attention() {
  std::ostringstream w;
  const std::vector<float> weights = test::Floats(16 * 16, 0.5f, 3);
  for (std::size_t i = 0; i < weights.size(); ++i) w << (i ? ", " : "") << weights[i];
  return R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,S,16] x, float[1,1,1,S] mask) => (float[1,2,S,8] y) {
      w = Constant <value = float[16,16] {)" + w.str() + R"(}> ()
      q = MatMul (x, w)
      shape = Constant <value = int64[4] {1, -1, 2, 8}> ()
      r = Reshape (q, shape)
      h = Transpose <perm = [0, 2, 1, 3]> (r)
      kt = Transpose <perm = [0, 1, 3, 2]> (h)
      s = MatMul (h, kt)
      c = Constant <value = float {0.35}> ()
      d = Mul (s, c)
      e = Add (d, mask)
      p = Softmax <axis = -1> (e)
      y = MatMul (p, h)
    })";
}

std::vector<Tensor> Inputs(std::int64_t s) {
  return {test::TensorFrom({1, s, 16}, [](std::int64_t i) { return 2.0f * test::Wave(i * 7 + 1); }, "x"),
          test::TensorFrom({1, 1, 1, s}, [](std::int64_t i) { return i % 5 == 3 ? -10000.0f : 0.0f; }, "mask")};
}

int Count(const std::vector<ScheduleStep>& schedule, const std::function<bool(const ScheduleStep&)>& pred) {
  return static_cast<int>(std::count_if(schedule.begin(), schedule.end(), pred));
}

}  // namespace

TEST_CASE("a session's products with varying dims take no kernel compiled for one shape", "[any_shape_matmul]") {
  const std::string text = Attention();
  const auto varying = std::make_shared<const VaryingDims>(VaryingDimsOf(test::GraphFromText(text)));
  for (std::int64_t s : {2, 5, 17, 40}) {
    INFO("S = " << s);
    LoadOptions at;
    at.input_shapes = {{"x", {1, s, 16}}, {"mask", {1, 1, 1, s}}};
    const Graph graph = test::GraphFromText(text, at);
    CompileOptions options;
    options.varying_dims = varying;
    ExecutablePlan plan = ExecutablePlan::Compile(graph, test::FusePostdom(graph), options);
    const std::vector<ScheduleStep> schedule = plan.Schedule();
    INFO(test::StepList({{}, plan.stats(), schedule, plan.Describe()}));
    // Q Q^T (with the scale as its post-op) and P V, each made with run-time
    // dims; the projection by constant weights too on AVX-512, our GEMM on AVX2.
    const int own_gemm = backend::HaveGemm() ? 1 : 0;
    CHECK(Count(schedule, [](const ScheduleStep& st) { return st.kind == "matmul" && st.any_shape; }) == 3 - own_gemm);
    CHECK(Count(schedule, [](const ScheduleStep& st) { return st.impl.rfind("brg", 0) == 0; }) == 0);
    CHECK(Count(schedule, [](const ScheduleStep& st) { return st.impl == "onnxfuse:gemm"; }) == own_gemm);
    // The mask's Add after Q Q^T: our binary, in place (the tail of a chain,
    // chain_emit.cc), and no oneDNN kernel generated for this S at all.
    CHECK(Count(schedule, [](const ScheduleStep& st) { return st.impl == "onnxfuse:broadcast_binary"; }) == 1);
    CHECK(Count(schedule, [](const ScheduleStep& st) { return st.impl.find("jit:uni") != std::string::npos; }) == 0);
    const std::vector<Tensor> inputs = Inputs(s);
    const std::vector<Tensor> fused = plan.Run(inputs);
    const test::PlanRun unfused = test::RunPlan(graph, false, inputs);
    REQUIRE(fused.size() == 1);
    CHECK(fused[0].dims == unfused.outputs[0].dims);
    test::CheckClose(fused[0], std::vector<double>(unfused.outputs[0].data.begin(), unfused.outputs[0].data.end()),
                     1e-5, 1e-6);
  }
}

TEST_CASE("without varying dims the same graph compiles no run-time dims", "[any_shape_matmul]") {
  LoadOptions at;
  at.input_shapes = {{"x", {1, 17, 16}}, {"mask", {1, 1, 1, 17}}};
  const Graph graph = test::GraphFromText(Attention(), at);
  const test::PlanRun fused = test::RunPlan(graph, true, Inputs(17));
  CHECK(Count(fused.schedule, [](const ScheduleStep& st) { return st.any_shape; }) == 0);
}

TEST_CASE("WithRunTimeDims gives the flagged dims, and the strides beyond unit ones, at run time", "[any_shape_matmul]") {
  using dnnl::memory;
  const memory::desc plain({1, 4, 9, 64}, memory::data_type::f32, memory::format_tag::abcd);
  CHECK(backend::WithRunTimeDims(plain, {false, false, false, false}) == plain);
  const memory::desc any = backend::WithRunTimeDims(plain, {false, false, true, false});
  CHECK(any.dims() == memory::dims{1, 4, DNNL_RUNTIME_DIM_VAL, 64});
  const auto& strides = any.data.format_desc.blocking.strides;
  CHECK(strides[3] == 1);
  CHECK(strides[2] == DNNL_RUNTIME_DIM_VAL);
  CHECK(strides[0] == DNNL_RUNTIME_DIM_VAL);
  // A transposed view keeps its unit stride where it is.
  const memory::desc view({1, 4, 64, 9}, memory::data_type::f32, memory::dims{2304, 576, 1, 64});
  const auto& view_strides = backend::WithRunTimeDims(view, {false, false, false, true}).data.format_desc.blocking.strides;
  CHECK(view_strides[2] == 1);
  CHECK(view_strides[3] == DNNL_RUNTIME_DIM_VAL);
}

TEST_CASE("a matmul with run-time dims takes only the post-ops oneDNN computes right", "[any_shape_matmul]") {
  // x x^T, then two linear steps around an Abs: one primitive would drop the second.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[S,1] x) => (float[S,S] y) {
      t = Transpose <perm = [1, 0]> (x)
      p = MatMul (x, t)
      two = Constant <value = float {2.0}> ()
      m = Mul (p, two)
      a = Abs (m)
      c = Constant <value = float {0.661}> ()
      y = Add (a, c)
    })";
  const auto varying = std::make_shared<const VaryingDims>(VaryingDimsOf(test::GraphFromText(text)));
  for (std::int64_t s : {1, 3}) {
    INFO("S = " << s);
    LoadOptions at;
    at.input_shapes = {{"x", {s, 1}}};
    const Graph graph = test::GraphFromText(text, at);
    CompileOptions options;
    options.varying_dims = varying;
    ExecutablePlan plan = ExecutablePlan::Compile(graph, test::FusePostdom(graph), options);
    const Tensor x = test::TensorFrom({s, 1}, [](std::int64_t i) { return i % 2 ? -0.75f - static_cast<float>(i) : 0.5f + static_cast<float>(i); });
    std::vector<double> expected;
    for (std::int64_t i = 0; i < s; ++i)
      for (std::int64_t j = 0; j < s; ++j) expected.push_back(std::fabs(2.0 * x.data[i] * x.data[j]) + 0.661);
    INFO(test::StepList({{}, plan.stats(), plan.Schedule(), plan.Describe()}));
    test::CheckClose(plan.Run({x}).at(0), expected, 1e-6);
  }
}
