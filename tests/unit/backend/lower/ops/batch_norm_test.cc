// BatchNormalization (src/backend/lower/ops/batch_norm.cc): its inference formula
// as a per-channel affine map (BatchNormAffine, folded into convolutions and
// Gemm), and as a primitive of its own where there is nothing to fold it into
// (EmitBatchNorm), a following Relu fused. ONNX Operators.md,
// BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/lower/ops/batch_norm.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Inference BatchNormalizations (epsilon 0.01) of run-time x: all parameters
// constant (n), the mean a graph input (nm), training_mode (nt).
const char* const kNorms = R"(<ir_version: 8, opset_import: ["" : 15]>
g (float[1,3,2,2] x, float[3] s = {2.0, 0.5, -1.0}, float[3] t = {0.3, -0.1, 0.0}, float[3] m = {0.05, -0.4, 1.0},
   float[3] v = {0.25, 4.0, 0.0}, float[3] mi)
  => (float[1,3,2,2] n, float[1,3,2,2] nm, float[1,3,2,2] nt) {
  n = BatchNormalization <epsilon = 0.01> (x, s, t, m, v)
  nm = BatchNormalization <epsilon = 0.01> (x, s, t, mi, v)
  nt, rm, rv = BatchNormalization <epsilon = 0.01, training_mode = 1> (x, s, t, m, v)
}
)";

const double kScale[] = {2.0, 0.5, -1.0}, kShift[] = {0.3, -0.1, 0.0}, kMean[] = {0.05, -0.4, 1.0},
             kVar[] = {0.25, 4.0, 0.0};

}  // namespace

TEST_CASE("BatchNormAffine: scale = gamma / sqrt(var + epsilon), shift = B - mean * scale", "[batch_norm]") {
  Graph graph = test::GraphFromText(kNorms);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  backend::Builder b(graph, true, engine);
  auto bn = [&](const std::string& out) -> const Node& { return graph.node(graph.value(*graph.FindValue(out)).producer); };

  const std::optional<eval::ChannelAffine> affine = backend::BatchNormAffine(b, bn("n"));
  REQUIRE(affine);
  REQUIRE(affine->scale.size() == 3);
  REQUIRE(affine->shift.size() == 3);
  for (std::size_t c = 0; c < 3; ++c) {
    INFO("channel " << c);
    const double k = kScale[c] / std::sqrt(kVar[c] + 0.01);  // var 0: epsilon alone keeps it finite
    CHECK(affine->scale[c] == Approx(k).epsilon(1e-6));
    CHECK(affine->shift[c] == Approx(kShift[c] - kMean[c] * k).epsilon(1e-6).margin(1e-7));
  }
  CHECK_FALSE(backend::BatchNormAffine(b, bn("nm")));  // a parameter known only at run time
  CHECK_FALSE(backend::BatchNormAffine(b, bn("nt")));  // training mode
}

TEST_CASE("a BatchNormalization of a graph input is one batch_norm step, a following Relu a step of its own",
          "[batch_norm]") {
  // Not fuse_norm_relu: oneDNN's JIT batch normalization turns NaN into 0 there.
  const Tensor x = test::TensorFrom({1, 3, 2, 2}, [](std::int64_t i) { return 4 * test::Wave(5 * i); });
  for (bool relu : {false, true}) {
    INFO((relu ? "with Relu" : "without Relu"));
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,2,2] x, float[3] s = {2.0, 0.5, -1.0}, float[3] t = {0.3, -0.1, 0.0}, float[3] m = {0.05, -0.4, 1.0},
         float[3] v = {0.25, 4.0, 0.0}) => (float[1,3,2,2] y) {
        )" + std::string(relu ? "n = BatchNormalization <epsilon = 0.01> (x, s, t, m, v)\n        y = Relu (n)"
                               : "y = BatchNormalization <epsilon = 0.01> (x, s, t, m, v)") + R"(
      })";
    std::vector<double> expected;
    for (std::size_t i = 0; i < x.data.size(); ++i) {
      const std::size_t c = i / 4;
      const double y = (x.data[i] - kMean[c]) / std::sqrt(kVar[c] + 0.01) * kScale[c] + kShift[c];
      expected.push_back(relu ? std::max(0.0, y) : y);
    }
    const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "batch_norm BatchNormalization_0 ") == 1);
    CHECK(test::StepsStartingWith(fused, "eltwise Relu_1 ") == (relu ? 1 : 0));
    CHECK(fused.stats.kernels - fused.stats.reorders == (relu ? 2 : 1));
  }
}

TEST_CASE("a BatchNormalization in training mode is refused at build time", "[batch_norm]") {
  const std::string message = test::CompileError(R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[1,3,2,2] x, float[3] s = {2.0, 0.5, -1.0}, float[3] t = {0.3, -0.1, 0.0}, float[3] m = {0.05, -0.4, 1.0},
       float[3] v = {0.25, 4.0, 0.5}) => (float[1,3,2,2] y) {
      y, rm, rv = BatchNormalization <training_mode = 1> (x, s, t, m, v)
    })");
  CHECK_THAT(message, Catch::Contains("training_mode=1 is not supported") && Catch::Contains("BatchNormalization_0"));
}

TEST_CASE("a BatchNormalization whose scale, shift, mean and variance are graph inputs reads them at run time",
          "[batch_norm]") {
  const Tensor x = test::TensorFrom({2, 3, 2, 2}, [](std::int64_t i) { return 4 * test::Wave(5 * i); });
  const Tensor s = test::TensorOf("s", {3}, {2.0f, 0.5f, -1.0f}), t = test::TensorOf("t", {3}, {0.3f, -0.1f, 0.0f});
  const Tensor m = test::TensorOf("m", {3}, {0.05f, -0.4f, 1.0f}), v = test::TensorOf("v", {3}, {0.25f, 4.0f, 0.0f});
  std::vector<double> expected;
  for (std::size_t i = 0; i < x.data.size(); ++i) {
    const std::size_t c = i / 4 % 3;
    expected.push_back(std::max(0.0, (x.data[i] - kMean[c]) / std::sqrt(kVar[c] + 0.01) * kScale[c] + kShift[c]));
  }
  const test::PlanRun fused = test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[2,3,2,2] x, float[3] s, float[3] t, float[3] m, float[3] v) => (float[2,3,2,2] y) {
      n = BatchNormalization <epsilon = 0.01> (x, s, t, m, v)
      y = Relu (n)
    })",
                                              {x, s, t, m, v}, expected, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "batch_norm BatchNormalization_0 ") == 1);
  CHECK(test::StepsStartingWith(fused, "eltwise Relu_1 ") == 1);
  // A Conv's output normalized by run-time parameters: not folded into the weights, still right.
  const std::vector<float> w = test::Floats(3 * 3, 0.5f, 4);
  std::vector<double> conv = test::NaivePointwise(x, w, 3);
  for (std::size_t i = 0; i < conv.size(); ++i) {
    const std::size_t c = i / 4 % 3;
    conv[i] = (conv[i] - kMean[c]) / std::sqrt(kVar[c] + 0.01) * kScale[c] + kShift[c];
  }
  const test::PlanRun chained = test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[2,3,2,2] x, float[3] s, float[3] t, float[3] m, float[3] v, float[3,3,1,1] w = )" +
                                                    test::FloatList(w) + R"() => (float[2,3,2,2] y) {
      c = Conv (x, w)
      y = BatchNormalization <epsilon = 0.01> (c, s, t, m, v)
    })",
                                                {x, s, t, m, v}, conv, 1e-5);
  INFO(test::StepList(chained));
  CHECK(test::StepsStartingWith(chained, "batch_norm ") == 1);
}

TEST_CASE("a BatchNormalization of 2-D or 3-D data runs on oneDNN's jit kernel, viewed as 4-D", "[batch_norm]") {
  // oneDNN 2.6 has only its reference batch normalization for 2-D and 3-D
  // data (found by the differential tester): the same bytes as [N, C, 1, W].
  const double s[] = {2.0, 0.5, 1.0, -1.0, 0.75}, t[] = {0.3, -0.1, 0.0, 0.2, 1.0}, m[] = {0.05, -0.4, 0.0, 0.1, 0.5};
  const double v[] = {0.25, 4.0, 1.0, 0.5, 2.0};
  for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{2, 5, 7}, std::vector<std::int64_t>{3, 5}}) {
    const std::string shape = dims.size() == 3 ? "2,5,7" : "3,5";
    INFO("x [" << shape << "]");
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[" + shape + "] x, float[5] s = {2.0, 0.5, 1.0, -1.0, 0.75}, "
                             "float[5] t = {0.3, -0.1, 0.0, 0.2, 1.0}, float[5] m = {0.05, -0.4, 0.0, 0.1, 0.5}, "
                             "float[5] v = {0.25, 4.0, 1.0, 0.5, 2.0}) => (float[" + shape + "] y) {\n"
                             "  y = BatchNormalization <epsilon = 0.001> (x, s, t, m, v)\n}";
    const Tensor x = test::TensorFrom(dims, [](std::int64_t i) { return test::Wave(3 * i); });
    const std::int64_t inner = dims.size() == 3 ? dims[2] : 1;
    std::vector<double> y;
    for (std::size_t i = 0; i < x.data.size(); ++i) {
      const std::size_t c = (i / static_cast<std::size_t>(inner)) % 5;
      y.push_back((x.data[i] - m[c]) * s[c] / std::sqrt(v[c] + 0.001) + t[c]);
    }
    const test::PlanRun fused = test::CheckBoth(text, {x}, y, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::SlowSteps(fused) == 0);
  }
}
