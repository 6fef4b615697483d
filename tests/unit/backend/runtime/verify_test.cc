// The fused plan verified against the unfused one (src/backend/runtime/verify.cc): a
// difference localized to the first group whose result differs, not to the
// graph output it reaches; a difference that groups only carry on (each plan's
// result its own inputs' recomputation) is the graph's conditioning, not a failure.
#include <catch2/catch.hpp>

#include <algorithm>

#include "backend/runtime/executor.h"
#include "backend/runtime/verify.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

Verification Verify(const Graph& graph, const FusionPlan& plan) {
  const std::vector<Tensor> inputs = RandomInputs(graph);
  std::vector<Tensor> fused = ExecutablePlan::Compile(graph, plan, CompileOptions{true}).Run(inputs);
  std::vector<Tensor> unfused = ExecutablePlan::Compile(graph, plan, CompileOptions{false}).Run(inputs);
  return VerifyOutputs(graph, plan, inputs, fused, unfused);
}

}  // namespace

TEST_CASE("a fused plan that computes the same outputs verifies", "[verify]") {
  Graph graph = test::GraphFromText(test::kBasicBlock);
  Verification v = Verify(graph, test::FusePostdom(graph));
  CHECK(v.ok);
  REQUIRE(v.outputs.size() == 1);
  CHECK(v.outputs[0].output == "y");
  CHECK(v.outputs[0].max_rel <= kVerifyRtol);
  CHECK_FALSE(v.first);
}

TEST_CASE("a difference is localized to the first group whose result differs", "[verify]") {
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan plan = test::FusePostdom(graph);
  // r1 = Relu(BatchNormalization(Conv(r0))) ends the second group; everything after it differs too.
  const NodeId relu = graph.value(*graph.FindValue("r1")).producer;
  test::FaultAt fault(graph.node(relu).name);
  Verification v = Verify(graph, plan);
  CHECK_FALSE(v.ok);
  REQUIRE(v.first);
  CHECK(v.first->value == "r1");
  CHECK(v.first->node == graph.node(relu).name);
  CHECK(v.first->group == plan.group_of[relu]);
  CHECK(v.first->function == "Conv_BatchNormalization_Relu");
  CHECK(v.first->max_abs == Approx(1.0).epsilon(1e-3));
  CHECK(v.Summary().find("at node '" + graph.node(relu).name + "' (value 'r1'") != std::string::npos);
}

TEST_CASE("a difference that keeping the groups' results hides is reported as not localized", "[verify]") {
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan plan = test::FusePostdom(graph);
  const std::vector<Tensor> inputs = RandomInputs(graph);
  std::vector<Tensor> unfused = ExecutablePlan::Compile(graph, plan, CompileOptions{false}).Run(inputs);
  std::vector<Tensor> fused = unfused;
  fused[0].data[5] += 1.f;  // wrong here, right when compiled again
  Verification v = VerifyOutputs(graph, plan, inputs, fused, unfused);
  CHECK_FALSE(v.ok);
  CHECK_FALSE(v.first);
  CHECK(v.localization_note.find("not localized") != std::string::npos);
  CHECK(v.Summary().find("output 'y' differs") != std::string::npos);
}

namespace {

// A row of nearly equal values (z - (z + c), c = max(int64(4 z)) / 4, equal
// up to the rounding of z + c), through x * Sigmoid(x) (our Swish kernel
// fused; oneDNN's logistic, then a Mul, unfused), minus the row's largest:
// the result is nothing but rounding, and the two Swish computations round
// some element apart (the differential tester's seed 85000357).
const char* const kCancellingSwish = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,3,3,9] x) => (float[1,81] y) {
    z = Flatten <axis = 1> (x)
    four = Constant <value = float {4.0}> ()
    quarter = Constant <value = float {0.25}> ()
    shape = Constant <value = int64[2] {1, 81}> ()
    z4 = Mul (z, four)
    i = Cast <to = 7> (z4)
    m = ReduceMax <axes = [-1], keepdims = 1> (i)
    e = Expand (m, shape)
    f = Cast <to = 1> (e)
    c = Mul (f, quarter)
    zc = Add (z, c)
    d = Sub (z, zc)
    sig = Sigmoid (d)
    a = Mul (d, sig)
    k = ArgMax <axis = 1, keepdims = 1> (a)
    top = GatherElements <axis = 1> (a, k)
    y = Sub (a, top)
  })";

}  // namespace

TEST_CASE("a difference that only later groups magnify verifies, the groups named as carrying it", "[verify]") {
  Graph graph = test::GraphFromText(kCancellingSwish);
  const FusionPlan plan = test::FuseAs(graph, Strategy::kPattern);
  const std::vector<Tensor> inputs = RandomInputs(graph);
  const std::vector<Tensor> fused = ExecutablePlan::Compile(graph, plan, CompileOptions{true}).Run(inputs);
  const std::vector<Tensor> unfused = ExecutablePlan::Compile(graph, plan, CompileOptions{false}).Run(inputs);
  const Verification v = VerifyOutputs(graph, plan, inputs, fused, unfused);
  // The premise: y differs between the plans beyond the tolerance.
  REQUIRE(v.outputs.size() == 1);
  REQUIRE_FALSE(v.outputs[0].ok);
  CHECK(v.ok);
  CHECK_FALSE(v.first);
  REQUIRE_FALSE(v.carried.empty());
  CHECK(v.carried.back().value == "y");
  CHECK(v.Summary().find("the graph's conditioning") != std::string::npos);
}

TEST_CASE("a wrong group still fails after groups that only carry a difference on", "[verify]") {
  std::string text = kCancellingSwish;
  text.replace(text.find("(float[1,81] y)"), 15, "(float[1,81] w)");
  text.insert(text.rfind('}'), "  w = Neg (y)\n  ");
  Graph graph = test::GraphFromText(text);
  const FusionPlan plan = test::FuseAs(graph, Strategy::kPattern);
  const NodeId neg = graph.value(*graph.FindValue("w")).producer;
  test::FaultAt fault(graph.node(neg).name);
  const Verification v = Verify(graph, plan);
  CHECK_FALSE(v.ok);
  REQUIRE(v.first);
  CHECK(v.first->value == "w");
  CHECK(v.first->group == plan.group_of[neg]);
  CHECK_FALSE(v.carried.empty());  // the ArgMax's near-tie, at least
  CHECK(v.Summary().find("before it, differing only as their inputs do") != std::string::npos);
}

TEST_CASE("integer outputs must agree exactly: a difference far below rtol still fails", "[verify]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[2] a) => (int64[2] y) { y = Neg (a) })");
  const FusionPlan plan = test::FusePostdom(graph);
  const std::vector<Tensor> inputs = {test::IntTensorOf("a", {2}, {1000000, 5})};
  std::vector<Tensor> fused = ExecutablePlan::Compile(graph, plan, CompileOptions{true}).Run(inputs);
  const std::vector<Tensor> unfused = ExecutablePlan::Compile(graph, plan, CompileOptions{false}).Run(inputs);
  CHECK(VerifyOutputs(graph, plan, inputs, fused, unfused).ok);
  fused[0].int_data[1] += 1;  // relative to the largest value: 1e-6, below kVerifyRtol
  const Verification v = VerifyOutputs(graph, plan, inputs, fused, unfused);
  CHECK_FALSE(v.ok);
  CHECK(v.outputs[0].max_abs == 1);
  CHECK(v.outputs[0].max_rel < kVerifyRtol);
}

namespace {

// Conv -> QuantizeLinear -> DequantizeLinear -> Conv: the fused and unfused
// convolutions sum in other orders, and a fine scale turns that into steps.
const char* const kQdqConvs = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,8,6,6] x) => (float[1,8,6,6] y) {
    w = Constant <value = float[8,8,3,3] {)";

std::string QdqConvs() {
  std::string text = kQdqConvs;
  for (int i = 0; i < 8 * 8 * 9; ++i) text += (i ? "," : "") + std::to_string(((i * 37) % 19 - 9) / 23.0);
  return text + R"(}> ()
    s = Constant <value = float {0.001}> ()
    z = Constant <value = uint8 {128}> ()
    c = Conv <pads = [1, 1, 1, 1]> (x, w)
    q = QuantizeLinear (c, s, z)
    d = DequantizeLinear (q, s, z)
    y = Conv <pads = [1, 1, 1, 1]> (d, w)
  })";
}

}  // namespace

TEST_CASE("a QDQ graph is verified without fake quantization, and a wrong step still fails it", "[verify]") {
  Graph graph = test::GraphFromText(QdqConvs());
  FusionPlan plan = test::FusePostdom(graph);
  Verification v = Verify(graph, plan);
  CHECK(v.without_fake_quantization);
  CHECK(v.ok);
  CHECK(v.Summary().find("without fake quantization") != std::string::npos);
  const NodeId last = graph.value(*graph.FindValue("y")).producer;
  test::FaultAt fault(graph.node(last).name);
  v = Verify(graph, plan);
  CHECK_FALSE(v.ok);
  REQUIRE(v.first);
  CHECK(v.first->value == "y");
}

TEST_CASE("without fake quantization a QuantizeLinear -> DequantizeLinear pair is the identity in both modes",
          "[verify][quantize]") {
  Graph graph = test::GraphFromText(QdqConvs());
  FusionPlan plan = test::FusePostdom(graph);
  const std::vector<Tensor> inputs = RandomInputs(graph);
  // The float graph: y = Conv(Conv(x)), the pair taken out.
  std::string text = QdqConvs();
  text.replace(text.find("q = Quantize"), text.find("y = Conv") - text.find("q = Quantize"), "");
  text.replace(text.find("(d, w)"), 6, "(c, w)");
  Graph float_graph = test::GraphFromText(text);
  for (bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CompileOptions options{fuse};
    options.fake_quantize = false;
    const Tensor y = ExecutablePlan::Compile(graph, plan, options).Run(inputs).at(0);
    const Tensor expected = ExecutablePlan::Compile(float_graph, test::FusePostdom(float_graph), CompileOptions{fuse})
                                .Run(inputs).at(0);
    CHECK(y.data == expected.data);
    // With it, the steps of 0.001 show.
    const Tensor quantized = ExecutablePlan::Compile(graph, plan, CompileOptions{fuse}).Run(inputs).at(0);
    CHECK(quantized.data != expected.data);
  }
}

namespace {

// x -> Q -> DQ -> Conv (7-bit int8 weights per channel, int32 bias) -> Relu
// -> Q -> DQ -> Conv -> Q -> DQ -> y: two int8 convolutions in a fused plan
// on any CPU (int8_conv.h), three quantized activations (xq, aq, yq).
std::string Int8Convs() {
  std::string w, ws, b;
  for (int i = 0; i < 8 * 8 * 9; ++i) w += (i ? "," : "") + std::to_string((i * 37) % 129 - 64);
  for (int o = 0; o < 8; ++o) {
    ws += (o ? "," : "") + std::to_string(0.002 * (1 + o % 3));
    b += (o ? "," : "") + std::to_string((o * 53) % 400 - 200);
  }
  return R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,8,10,10] x) => (float[1,8,10,10] y) {
    wq = Constant <value = int8[8,8,3,3] {)" + w + R"(}> ()
    ws = Constant <value = float[8] {)" + ws + R"(}> ()
    wz = Constant <value = int8[8] {0,0,0,0,0,0,0,0}> ()
    bq = Constant <value = int32[8] {)" + b + R"(}> ()
    sx = Constant <value = float {0.01}> ()
    zx = Constant <value = uint8 {128}> ()
    sa = Constant <value = float {0.02}> ()
    za = Constant <value = uint8 {0}> ()
    sy = Constant <value = float {0.03}> ()
    zy = Constant <value = uint8 {100}> ()
    bs = Mul (ws, sx)
    wd = DequantizeLinear <axis = 0> (wq, ws, wz)
    bd = DequantizeLinear <axis = 0> (bq, bs)
    xq = QuantizeLinear (x, sx, zx)
    xd = DequantizeLinear (xq, sx, zx)
    c1 = Conv <pads = [1, 1, 1, 1]> (xd, wd, bd)
    a = Relu (c1)
    aq = QuantizeLinear (a, sa, za)
    ad = DequantizeLinear (aq, sa, za)
    c2 = Conv <pads = [1, 1, 1, 1]> (ad, wd)
    yq = QuantizeLinear (c2, sy, zy)
    y = DequantizeLinear (yq, sy, zy)
  })";
}

}  // namespace

TEST_CASE("the int8 convolutions of a quantized graph are checked in steps, each on the same integers",
          "[verify][quantize][int8]") {
  Graph graph = test::GraphFromText(Int8Convs());
  FusionPlan plan = test::FusePostdom(graph);
  const std::vector<Tensor> inputs = RandomInputs(graph);
  const auto schedule = ExecutablePlan::Compile(graph, plan, CompileOptions{true}).Schedule();
  const auto int8 = std::count_if(schedule.begin(), schedule.end(), [](const ScheduleStep& s) {
    return s.kind == "conv" && (s.data_type == "u8" || s.data_type == "s8");
  });
  REQUIRE(int8 == 2);  // what is checked is the int8 arithmetic

  Verification v = Verify(graph, plan);
  CHECK(v.ok);
  CHECK(v.quantized_note.empty());
  REQUIRE(v.quantized.size() == 3);
  CHECK(v.quantized[0].value == "xq");
  CHECK(v.quantized[1].value == "aq");
  CHECK(v.quantized[2].value == "yq");
  for (const QuantizedCheck& q : v.quantized) {
    INFO(q.value);
    CHECK(q.elements == 800);
    CHECK(q.max_steps <= 1);
    CHECK(q.share_over_one_step == 0);
  }
  CHECK(v.Summary().find("the 3 quantized activations agree") != std::string::npos);

  // The integers the second convolution reads made 3 steps wrong in the fused
  // plan only: its result fails, and nothing before it.
  const NodeId aq = graph.value(*graph.FindValue("aq")).producer;
  test::FaultAt fault(graph.node(aq).name + "_reference");
  v = Verify(graph, plan);
  CHECK_FALSE(v.ok);
  CHECK(v.outputs.at(0).ok);  // the model's own plans are right
  REQUIRE(v.quantized.size() == 3);
  CHECK(v.quantized[0].ok);
  CHECK(v.quantized[1].ok);
  CHECK_FALSE(v.quantized[2].ok);
  CHECK(v.quantized[2].max_steps > 2);
  CHECK(v.Summary().find("quantized activation 'yq' differs by up to") != std::string::npos);
}

TEST_CASE("a dynamically quantized product is verified without fake quantization: the float values it stands for",
          "[verify][quantize]") {
  // rewrite/integer_products_as_float.h's form of ONNX Runtime's
  // quantize_dynamic: (Cast (y) - Cast (z)) x w_q, scaled by y_scale * w_scale.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[4,8] x) => (float[4,3] p) {
      q, s, z = DynamicQuantizeLinear (x)
      qf = Cast <to = 1> (q)
      zf = Cast <to = 1> (z)
      a = Sub (qf, zf)
      w = Constant <value = float[8,3] {1, -2, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1, 3, 3, -3, 0, 0, 9, -9, 4, 2, 1, 1, -5}> ()
      m = MatMul (a, w)
      ws = Constant <value = float {0.01}> ()
      scale = Mul (s, ws)
      p = Mul (m, scale)
    })";
  Graph graph = test::GraphFromText(text);
  const FusionPlan plan = test::FusePostdom(graph);
  const Verification v = Verify(graph, plan);
  CHECK(v.without_fake_quantization);
  CHECK(v.ok);
  // Without fake quantization both plans compute x w * 0.01 (a float MatMul
  // of x with the weights 0.01 w), rounding aside; with it, steps show.
  const std::vector<Tensor> inputs = RandomInputs(graph);
  std::vector<double> expected(12, 0.0);
  const std::vector<float> w = {1, -2, 3, 0, 5, 1, -1, 2, 7, 1, 1, 1, 3, 3, -3, 0, 0, 9, -9, 4, 2, 1, 1, -5};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 8; ++k) expected[i * 3 + j] += 0.01 * inputs[0].data[i * 8 + k] * w[k * 3 + j];
  for (bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CompileOptions options{fuse};
    options.fake_quantize = false;
    test::CheckClose(ExecutablePlan::Compile(graph, plan, options).Run(inputs).at(0), expected, 1e-5, 1e-6);
    const Tensor quantized = ExecutablePlan::Compile(graph, plan, CompileOptions{fuse}).Run(inputs).at(0);
    double worst = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(quantized.data[i] - expected[i]));
    CHECK(worst > 1e-5);
  }
}
