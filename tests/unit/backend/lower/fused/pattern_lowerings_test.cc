// Lowering by the library pattern's name (src/backend/lower/fused/pattern_lowerings.cc):
// a pattern group and a pattern region of a postdom plan give the same steps,
// each labelled with its group (and the group's pattern), and a name that
// does not fit its nodes is not trusted.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "backend/lower/fused/pattern_lowerings.h"
#include "fuse/pattern_fuser.h"
#include "fuse/pattern_regions.h"
#include "fuse/postdom_fuser.h"
#include "backend/runtime/executor.h"
#include "patterns/pattern.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x -> LayerNormalization (decomposed) -> Gelu (decomposed) -> y, [1, 4, 8];
// then a squeeze-and-excitation block on a [1, 16, 5, 5] input z (Relu squeeze,
// Sigmoid gate).
std::string Model() {
  const auto list = [](std::size_t n, float scale, int salt) {
    std::string s;
    for (float v : test::Floats(n, scale, salt)) s += (s.empty() ? "" : ", ") + std::to_string(v);
    return s;
  };
  return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x, float[1,16,5,5] z) => (float[1,4,8] y, float[1,16,5,5] e)
  <float[8] g0 = {1, 2, 3, 4, 5, 6, 7, 8}, float[8] b0 = {0.5, 0, 0, 0, 0, 0, 0, -0.5},
   float[4,16,1,1] w1 = {)" + list(64, 0.5f, 2) + R"(}, float[4] b1 = {)" + list(4, 0.3f, 3) + R"(},
   float[16,4,1,1] w2 = {)" + list(64, 0.6f, 4) + R"(}, float[16] b2 = {)" + list(16, 0.4f, 5) + R"(}> {
)" + test::LayerNormText("x", "g0", "b0", "ln") + test::GeluText("ln", "y", "0.5", "gelu_") + R"(
  pool = GlobalAveragePool (z)
  c1 = Conv <kernel_shape = [1, 1]> (pool, w1, b1)
  h = Relu (c1)
  c2 = Conv <kernel_shape = [1, 1]> (h, w2, b2)
  gate = Sigmoid (c2)
  e = Mul (z, gate)
}
)";
}

// The first half of a transformer MLP as torch exports it: x [1, 4, 8] ->
// MatMul(x, W [8, 16]) -> Add(B [16], .) -> Gelu (decomposed, Erf's 1 written
// as `one`) -> y [1, 4, 16]; with `residual`, z = y + h reads the Gelu's input
// h a third time. Nodes, named by the loader: MatMul_0, Add_1, Div_3, Erf_4,
// Add_6, Mul_7, Mul_9 (Add_10).
std::string MlpModel(const std::string& one, bool residual) {
  std::string gelu = test::GeluText("h", "y");
  gelu.replace(gelu.find("{1.0}"), 5, "{" + one + "}");  // std::out_of_range when GeluText no longer writes it
  return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x) => (float[1,4,16] )" + std::string(residual ? "z" : "y") + R"()
  <float[8,16] w = )" + test::FloatList(test::Floats(128, 0.4f, 6)) + R"(, float[16] bias = )" +
         test::FloatList(test::Floats(16, 0.5f, 7)) + R"(> {
  mm = MatMul (x, w)
  h = Add (bias, mm)
)" + gelu + (residual ? "  z = Add (y, h)\n" : "") + "}\n";
}

Tensor MlpInput() { return test::TensorFrom({1, 4, 8}, [](std::int64_t i) { return 3 * test::Wave(i); }, "x"); }

std::vector<Tensor> Inputs() {
  return {test::TensorFrom({1, 4, 8}, [](std::int64_t i) { return test::Wave(i); }, "x"),
          test::TensorFrom({1, 16, 5, 5}, [](std::int64_t i) { return test::Wave(7 * i + 3); }, "z")};
}

// "kind label" per step.
std::vector<std::string> KindsAndLabels(const ExecutablePlan& plan) {
  std::vector<std::string> steps;
  for (const ScheduleStep& s : plan.Schedule()) steps.push_back(s.kind + " " + s.label);
  return steps;
}

}  // namespace

TEST_CASE("a group the pattern library named is lowered by its name, as the same pattern's region in postdom groups",
          "[pattern_lowerings]") {
  const Graph graph = test::GraphFromText(Model());
  const FusionPlan by_pattern = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  std::set<std::string> named;
  for (const FusedGroup& g : by_pattern.groups) named.insert(g.pattern_name);
  REQUIRE(named == std::set<std::string>{"", "LayerNormalization", "Gelu", "SEReluSigmoid"});

  ExecutablePlan plan = ExecutablePlan::Compile(graph, by_pattern);
  const std::vector<ScheduleStep> schedule = plan.Schedule();
  int layer_norm = 0, gelu = 0, squeeze_excite = 0;
  for (const ScheduleStep& s : schedule) {
    INFO(s.kind << " " << s.label << " group " << s.group << " " << s.pattern);
    REQUIRE(s.group >= 0);
    CHECK(s.pattern == by_pattern.groups[static_cast<std::size_t>(s.group)].pattern_name);
    // Unnamed nodes are named <op>_<index> by the loader.
    layer_norm += s.kind == "layer_norm" && s.pattern == "LayerNormalization" &&
                  s.label == "ReduceMean_0+LayerNormalization";
    gelu += s.kind == "gelu" && s.pattern == "Gelu" && s.label == "Div_12+Gelu";
    squeeze_excite += s.kind == "squeeze_excite" && s.pattern == "SEReluSigmoid" &&
                      s.label == "Conv_20+Relu_21+Conv_22+Sigmoid_23";
  }
  CHECK(layer_norm == 1);
  CHECK(gelu == 1);
  CHECK(squeeze_excite == 1);

  // The post-dominator groups carry the same matches as regions: the same steps.
  const FusionPlan postdom = test::FusePostdom(graph);
  std::multiset<std::string> regions;
  for (const FusedGroup& g : postdom.groups)
    for (const PatternRegion& r : g.regions) regions.insert(r.pattern);
  CHECK(regions == std::multiset<std::string>{"LayerNormalization", "Gelu", "SEReluSigmoid"});
  ExecutablePlan by_region = ExecutablePlan::Compile(graph, postdom);
  CHECK(KindsAndLabels(plan) == KindsAndLabels(by_region));
  const std::vector<Tensor> a = plan.Run(Inputs()), b = by_region.Run(Inputs());
  const std::vector<Tensor> unfused = ExecutablePlan::Compile(graph, postdom, CompileOptions{false}).Run(Inputs());
  for (std::size_t o = 0; o < a.size(); ++o) {
    std::vector<double> expected(unfused[o].data.begin(), unfused[o].data.end());
    test::CheckClose(a[o], expected, 1e-5);
    CHECK(a[o].data == b[o].data);
  }
}

TEST_CASE("a pattern name that does not fit its group's ops is not trusted by the lowering", "[pattern_lowerings]") {
  // A plan file could carry any name: one whose ops are not the group's lowers
  // the group as if no pattern named it: node by node, no crash, the same
  // outputs. The backend does not look for the decomposition itself.
  const Graph graph = test::GraphFromText(Model());
  FusionPlan plan = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  ExecutablePlan honest = ExecutablePlan::Compile(graph, plan);
  for (FusedGroup& g : plan.groups) {
    if (g.pattern_name == "LayerNormalization") g.pattern_name = "Gelu";
    else if (g.pattern_name == "Gelu") g.pattern_name = "SEReluHardSigmoid";
    else if (g.pattern_name == "SEReluSigmoid") g.pattern_name = "SESiLUSigmoid";
  }
  ExecutablePlan forged = ExecutablePlan::Compile(graph, plan);
  for (const ScheduleStep& s : forged.Schedule()) {
    INFO(s.kind << " " << s.label);
    CHECK(s.pattern == plan.groups[static_cast<std::size_t>(s.group)].pattern_name);  // labelled as named, still
    CHECK(s.kind != "layer_norm");
    CHECK(s.kind != "gelu");
    CHECK(s.kind != "squeeze_excite");
  }
  const std::vector<Tensor> a = honest.Run(Inputs()), b = forged.Run(Inputs());
  REQUIRE(a.size() == b.size());
  for (std::size_t o = 0; o < a.size(); ++o)
    test::CheckClose(b[o], std::vector<double>(a[o].data.begin(), a[o].data.end()), 1e-4, 1e-5);
}

TEST_CASE("every pattern lowered by name is a pattern of the library", "[pattern_lowerings]") {
  // A pattern renamed in patterns/ without its lowering would silently run
  // its decomposition op by op.
  std::set<std::string> library;
  for (const Pattern& p : LoadPatternDir(BuiltinPatternDir())) library.insert(p.function.name());
  const std::vector<std::string> names = backend::PatternLoweringNames();
  CHECK(names.size() == 21);  // 8 inverted residual, 5 PwDw, 4 SE, Gelu twice, LayerNorm, SoftmaxLog
  for (const std::string& name : names) {
    INFO(name);
    CHECK(library.count(name) == 1);
    CHECK(backend::HasPatternLowering(name));
  }
  CHECK_FALSE(backend::HasPatternLowering("ConvBnRelu"));  // the chain lowering's
  CHECK_FALSE(backend::HasPatternLowering(""));
  // What the fuser records as regions in postdom and greedy plans is lowered by name.
  for (const std::string& name : RegionPatternNames()) {
    INFO(name);
    CHECK(backend::HasPatternLowering(name));
  }
}

TEST_CASE("a Gelu the library found is one step whatever else reads x, and nothing else finds it", "[pattern_lowerings]") {
  // x is read by the Gelu's Div and Mul and by a residual Add: a chain could
  // not take the Gelu in place, the Gelu kernel writes a buffer of its own.
  // Without the library's regions the post-dominator groups run the
  // decomposition op by op: the backend recognizes no decomposition itself.
  const Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,24] x) => (float[2,24] y) {
)" + test::GeluText("x", "gelu") + R"(
  y = Add (gelu, x)
}
)");
  const Tensor x = test::TensorFrom({2, 24}, [](std::int64_t i) { return 4 * test::Wave(i); }, "x");
  std::vector<double> expected;
  for (float v : x.data) expected.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))) + v);
  auto count = [](const ExecutablePlan& plan, const std::string& kind) {
    int n = 0;
    for (const ScheduleStep& s : plan.Schedule()) n += s.kind == kind;
    return n;
  };
  ExecutablePlan named = ExecutablePlan::Compile(graph, FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {}));
  ExecutablePlan region = ExecutablePlan::Compile(graph, test::FusePostdom(graph));
  ExecutablePlan unannotated = ExecutablePlan::Compile(graph, FuseByPostDominator(graph, {}));
  CHECK(count(named, "gelu") == 1);
  CHECK(count(region, "gelu") == 1);
  CHECK(count(unannotated, "gelu") == 0);
  test::CheckClose(named.Run({x}).at(0), expected, 1e-5);
  test::CheckClose(region.Run({x}).at(0), expected, 1e-5);
  test::CheckClose(unannotated.Run({x}).at(0), expected, 1e-5);
}

TEST_CASE("a MatMulAddGelu named by the library is its chain and the Gelu taken by name, as a postdom chain takes a Gelu region",
          "[pattern_lowerings]") {
  const Graph graph = test::GraphFromText(MlpModel("1", false));
  const FusionPlan by_pattern = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  ExecutablePlan plan = ExecutablePlan::Compile(graph, by_pattern);
  // The matmul takes the bias; our Gelu kernel runs in place on its destination.
  const std::vector<std::string> expected_steps = {"matmul MatMul_0+Add", "gelu Div_3+Gelu"};
  CHECK(KindsAndLabels(plan) == expected_steps);
  for (const ScheduleStep& s : plan.Schedule()) {
    INFO(s.kind << " " << s.label);
    CHECK(s.pattern == "MatMulAddGelu");
    CHECK(s.group == plan.Schedule().front().group);
  }
  ExecutablePlan by_region = ExecutablePlan::Compile(graph, test::FusePostdom(graph));
  CHECK(KindsAndLabels(by_region) == expected_steps);
  // In place: two activation buffers, x [1, 4, 8] and the matmul's destination [1, 4, 16].
  CHECK(plan.stats().buffer_bytes_total == (4 * 8 + 4 * 16) * 4);
  CHECK(by_region.stats().buffer_bytes_total == plan.stats().buffer_bytes_total);
  const Tensor y = plan.Run({MlpInput()}).at(0);
  const Tensor unfused = ExecutablePlan::Compile(graph, by_pattern, CompileOptions{false}).Run({MlpInput()}).at(0);
  test::CheckClose(y, std::vector<double>(unfused.data.begin(), unfused.data.end()), 1e-5);
  CHECK(y.data == by_region.Run({MlpInput()}).at(0).data);
}

TEST_CASE("the library's constant tolerance decides a Gelu in every strategy", "[pattern_lowerings]") {
  // Erf's 1 written as 1.00005: within the library's tolerance for a pattern
  // constant (relative 1e-4). The library decides, once: named MatMulAddGelu
  // or a Gelu region of the post-dominator groups, the chain takes the Gelu.
  const Graph graph = test::GraphFromText(MlpModel("1.00005", false));
  const FusionPlan by_pattern = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  ExecutablePlan named = ExecutablePlan::Compile(graph, by_pattern);
  CHECK(KindsAndLabels(named) == std::vector<std::string>{"matmul MatMul_0+Add", "gelu Div_3+Gelu"});
  CHECK(named.stats().buffer_bytes_total == (4 * 8 + 4 * 16) * 4);  // taken by the chain: in place
  ExecutablePlan by_region = ExecutablePlan::Compile(graph, test::FusePostdom(graph));
  CHECK(KindsAndLabels(by_region) == KindsAndLabels(named));
  // Our kernel's Gelu has Erf's 1 exact: 0.5 h 5e-5 apart at most, |h| < 4 here.
  const Tensor unfused = ExecutablePlan::Compile(graph, by_pattern, CompileOptions{false}).Run({MlpInput()}).at(0);
  const std::vector<double> expected(unfused.data.begin(), unfused.data.end());
  test::CheckClose(named.Run({MlpInput()}).at(0), expected, 1e-4, 1e-4);  // absolute: 0.5 |h| 5e-5
  test::CheckClose(by_region.Run({MlpInput()}).at(0), expected, 1e-4, 1e-4);
}

TEST_CASE("a MatMulAddGelu name on a group whose Gelu input is read outside it runs the Gelu out of place",
          "[pattern_lowerings]") {
  // A plan file could name this group MatMulAddGelu (its ops fit) though the
  // residual Add_10 reads h too, which the library refuses. The chain's Gelu
  // overwrites its input in place, so it does not take it: the matmul step,
  // then the Gelu kernel into a buffer of its own, and Add_10 reads h intact.
  const Graph graph = test::GraphFromText(MlpModel("1", true));
  FusionPlan plan = test::PlanGrouping(
      graph, {{"MatMul_0", "Add_1", "Constant_2", "Div_3", "Erf_4", "Constant_5", "Add_6", "Mul_7", "Constant_8", "Mul_9"}});
  plan.groups.at(static_cast<std::size_t>(plan.group_of.at(0))).pattern_name = "MatMulAddGelu";
  ExecutablePlan forged = ExecutablePlan::Compile(graph, plan);
  const std::vector<std::string> steps = KindsAndLabels(forged);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0] == "matmul MatMul_0+Add");
  CHECK(steps[1] == "gelu Div_3+Gelu");
  CHECK(forged.stats().buffer_bytes_total > (4 * 8 + 4 * 16) * 4);  // not in place
  const Tensor z = forged.Run({MlpInput()}).at(0);
  const Tensor unfused = ExecutablePlan::Compile(graph, plan, CompileOptions{false}).Run({MlpInput()}).at(0);
  test::CheckClose(z, std::vector<double>(unfused.data.begin(), unfused.data.end()), 1e-5);
}
