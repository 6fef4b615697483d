// Concat -> BatchNormalization (-> Relu) in one pass
// (src/backend/lower/concat_norm.cc, TryConcatNorm): one custom kernel
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
