// The LayerNormalization decomposition the pattern library found as one
// primitive (src/backend/lower/fused/layer_norm.cc).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("a LayerNorm whose gamma and beta come from Identity nodes is one primitive", "[layer_norm]") {
  // torch exports a parameter shared by several layers (or equal to another)
  // as an Identity of one initializer. The lowering looks ahead into the
  // affine Mul and Add, which may be lowered in a group after the Identity's:
  // unless the Identity is folded first (PrefoldConstants), the affine ran as a
  // binary on oneDNN's reference kernel (BERT-style encoder).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x, float[8] g0 = {1, 2, 3, 4, 5, 6, 7, 8}, float[8] b0 = {0.5, 0, 0, 0, 0, 0, 0, -0.5}) => (float[1,4,8] y) {
  gamma = Identity (g0)
  beta = Identity (b0)
)" + test::LayerNormText("x", "gamma", "beta", "y") + "}\n";
  const Tensor x = test::TensorFrom({1, 4, 8}, [](std::int64_t i) { return test::Wave(i); });
  const std::vector<double> expected =
      test::LayerNormLastAxis(x, {1, 2, 3, 4, 5, 6, 7, 8}, {0.5, 0, 0, 0, 0, 0, 0, -0.5}, 1e-5);
  const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-4);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "layer_norm ") == 1);
  CHECK(test::StepsStartingWith(fused, "binary ") == 0);
}
