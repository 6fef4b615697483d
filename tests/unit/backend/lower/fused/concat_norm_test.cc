// Concat -> BatchNormalization (-> Relu) in one pass
// (src/backend/lower/fused/concat_norm.cc, TryConcatNorm): one custom kernel
// writes the normalized concatenation, channel-blocked when the parts are and
// start at block boundaries, else channels-last. Numbers are checked against
// naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::ConcatenatedPointwise;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("Concat -> BatchNormalization (-> Relu) of convolutions' outputs is one pass", "[backend_ops]") {
  // Three 1x1 convolutions of x [2,4,3,3], concatenated and normalized. Their
  // outputs are channels-last (AVX-512) or nChw8c (AVX2). Channels 16, 3, 32:
  // offsets 0, 16, 19, not all multiples of a block, so the result is
  // channels-last. Channels 16, 8, 24: offsets 0, 16, 24; blocked parts then
  // give a blocked result, the layout the parts have.
  const std::int64_t n = 2, cin = 4, hw = 9;
  Tensor x = TensorFrom({n, cin, 3, 3}, Wave);
  for (const std::vector<std::int64_t>& couts : {std::vector<std::int64_t>{16, 3, 32}, std::vector<std::int64_t>{16, 8, 24}}) {
    const std::int64_t total = couts[0] + couts[1] + couts[2];
    const bool aligned = couts[1] == 8;
    std::vector<std::vector<float>> w;
    for (std::size_t i = 0; i < couts.size(); ++i)
      w.push_back(Floats(static_cast<std::size_t>(couts[i] * cin), 0.5f, static_cast<int>(i) + 1));
    std::vector<float> gamma = Floats(static_cast<std::size_t>(total), 1.0f, 7),
                       beta = Floats(static_cast<std::size_t>(total), 0.5f, 8),
                       mean = Floats(static_cast<std::size_t>(total), 0.3f, 9), var;
    for (std::int64_t c = 0; c < total; ++c) var.push_back(0.25f + 0.05f * static_cast<float>(c % 7));
    auto d = [](std::int64_t v) { return std::to_string(v); };
    for (bool relu : {true, false}) {
      INFO((relu ? "with Relu" : "without Relu") << ", parts of " << couts[0] << ", " << couts[1] << ", " << couts[2]);
      std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[2,4,3,3] x, float[)" + d(couts[0]) + R"(,4,1,1] w0 = )" + test::FloatList(w[0]) + R"(, float[)" + d(couts[1]) +
                         R"(,4,1,1] w1 = )" + test::FloatList(w[1]) + R"(, float[)" + d(couts[2]) + R"(,4,1,1] w2 = )" + test::FloatList(w[2]) +
                         R"(, float[)" + d(total) + "] s = " + test::FloatList(gamma) + R"(, float[)" + d(total) + "] t = " +
                         test::FloatList(beta) + R"(, float[)" + d(total) + "] m = " + test::FloatList(mean) + R"(, float[)" + d(total) +
                         "] v = " + test::FloatList(var) + R"() => (float[2,)" + d(total) + R"(,3,3] y) {
          a = Conv (x, w0)
          b = Conv (x, w1)
          c = Conv (x, w2)
          cat = Concat <axis = 1> (a, b, c)
          )" + (relu ? "n = BatchNormalization <epsilon = 0.001> (cat, s, t, m, v)\n          y = Relu (n)"
                     : "y = BatchNormalization <epsilon = 0.001> (cat, s, t, m, v)") + R"(
        })";
      std::vector<double> y = ConcatenatedPointwise(x, w, couts);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const auto c = static_cast<std::size_t>(static_cast<std::int64_t>(i) / hw % total);
        const double e = (y[i] - mean[c]) / std::sqrt(static_cast<double>(var[c]) + 1e-3) * gamma[c] + beta[c];
        y[i] = relu ? std::max(0.0, e) : e;
      }
      PlanRun fused = CheckBoth(text, {x}, y, 1e-4);
      INFO(test::StepList(fused));
      const std::string step = relu ? "concat_batch_norm Concat_3+BatchNormalization_4+Relu_5 onnxfuse:custom "
                                    : "concat_batch_norm Concat_3+BatchNormalization_4 onnxfuse:custom ";
      const bool blocked_parts = test::StepsStartingWith(fused, "conv Conv_2 ") == 1 &&
                                 test::StepsContaining(fused, "Conv_2 jit_1x1:avx2 aBcd8b") == 1;
      CHECK(test::StepsStartingWith(fused, step) == 1);
      CHECK(test::StepsStartingWith(fused, step + (aligned && blocked_parts ? "aBcd8b" : "acdb")) == 1);
      CHECK(test::StepsStartingWith(fused, "concat ") == 0);
      CHECK(test::StepsStartingWith(fused, "batch_norm ") == 0);
    }
  }
}

TEST_CASE("Concat -> BatchNormalization is one pass only when the pattern and the layouts match",
          "[concat_norm]") {
  // Two 1x1 convolutions of x [1,4,3,3] (8 channels each, channels-last or
  // blocked), concatenated and normalized: one pass; not when the Concat is
  // also a graph output, nor for two plain graph inputs (the pass needs a
  // Concat read by the normalization alone, and parts in a convolution's layout).
  const std::vector<float> w0 = Floats(32, 0.5f, 1), w1 = Floats(32, 0.5f, 2), gamma = Floats(16, 1.0f, 3),
                           beta = Floats(16, 0.5f, 4), mean = Floats(16, 0.3f, 5), var(16, 0.5f);
  const std::string params = "float[16] s = " + test::FloatList(gamma) + ", float[16] t = " + test::FloatList(beta) +
                             ", float[16] m = " + test::FloatList(mean) + ", float[16] v = " + test::FloatList(var);
  const std::string convs = ", float[8,4,1,1] w0 = " + test::FloatList(w0) + ", float[8,4,1,1] w1 = " + test::FloatList(w1);
  struct Variant {
    const char* what;
    std::string inputs, outputs, body;
    bool one_pass;
  };
  const std::vector<Variant> variants = {
      {"the pattern", "float[1,4,3,3] x" + convs, "", "a = Conv (x, w0)\n b = Conv (x, w1)\n cat = Concat <axis = 1> (a, b)\n",
       true},
      {"the Concat also a graph output", "float[1,4,3,3] x" + convs, ", float[1,16,3,3] cat",
       "a = Conv (x, w0)\n b = Conv (x, w1)\n cat = Concat <axis = 1> (a, b)\n", false},
      {"plain parts", "float[1,8,3,3] a, float[1,8,3,3] b", "", "cat = Concat <axis = 1> (a, b)\n", false},
  };
  for (const Variant& v : variants) {
    INFO(v.what);
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + v.inputs + ", " + params +
                             ") => (float[1,16,3,3] y" + v.outputs + ") {\n " + v.body +
                             " y = BatchNormalization <epsilon = 0.001> (cat, s, t, m, v)\n}";
    Graph graph = test::GraphFromText(text);
    std::vector<Tensor> inputs;
    for (ValueId input : graph.inputs()) {
      const Value& value = graph.value(input);
      if (!graph.IsConstant(input)) inputs.push_back(TensorFrom(value.type.dims, Wave, value.name));
    }
    PlanRun fused = test::CheckFusedAgainstUnfused(graph, inputs, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "concat_batch_norm ") == (v.one_pass ? 1 : 0));
    CHECK(test::StepsStartingWith(fused, "batch_norm ") == (v.one_pass ? 0 : 1));
  }
}
