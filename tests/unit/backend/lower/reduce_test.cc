// Reductions (src/backend/lower/norm.cc, EmitReduce).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("a reduction over axes of size 1 reduces each element alone", "[lower_norm]") {
  // oneDNN's reduction refuses a destination equal to its source: this was an
  // internal error (found by the differential tester as ReduceMean of [1,1]).
  const Tensor x = test::TensorFrom({2, 1, 3}, [](std::int64_t i) { return 1.f + test::Wave(5 * i); });  // positive: ReduceLogSum
  for (const std::string op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    for (int keepdims : {1, 0}) {
      INFO(op << " keepdims " << keepdims);
      const std::string out = keepdims ? "2,1,3" : "2,3";
      const bool axes_input = op == "ReduceSum";  // ReduceSum-13 takes its axes as an input
      const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                               "g (float[2,1,3] x, int64[1] axes = {1}) => (float[" + out + "] y) {\n  r = " + op +
                               " <" + (axes_input ? "" : "axes = [1], ") + "keepdims = " + std::to_string(keepdims) +
                               "> (x" + (axes_input ? ", axes" : "") + ")\n  y = Identity (r)\n}";
      std::vector<double> expected;
      for (float v : x.data) {
        double e = v;
        if (op == "ReduceL1" || op == "ReduceL2") e = std::fabs(v);
        else if (op == "ReduceSumSquare") e = double{v} * v;
        else if (op == "ReduceLogSum") e = std::log(v);
        expected.push_back(e);
      }
      test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
      CHECK(fused.outputs.at(0).dims == (keepdims ? std::vector<std::int64_t>{2, 1, 3} : std::vector<std::int64_t>{2, 3}));
    }
}

TEST_CASE("a LayerNorm whose gamma and beta come from Identity nodes is one primitive", "[lower_norm]") {
  // torch exports a parameter shared by several layers (or equal to another)
  // as an Identity of one initializer. TryLayerNorm looks ahead into the
  // affine Mul and Add, which may be lowered in a group after the Identity's:
  // unless the Identity is folded first (PrefoldConstants), the affine ran as a
  // binary on oneDNN's reference kernel (BERT-style encoder, issue 25).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x, float[8] g0 = {1, 2, 3, 4, 5, 6, 7, 8}, float[8] b0 = {0.5, 0, 0, 0, 0, 0, 0, -0.5}) => (float[1,4,8] y) {
  gamma = Identity (g0)
  beta = Identity (b0)
  m = ReduceMean <axes = [-1]> (x)
  d = Sub (x, m)
  two = Constant <value = float {2}> ()
  p = Pow (d, two)
  v = ReduceMean <axes = [-1]> (p)
  eps = Constant <value = float {1e-5}> ()
  ve = Add (v, eps)
  s = Sqrt (ve)
  n = Div (d, s)
  a = Mul (n, gamma)
  y = Add (a, beta)
}
)";
  const Tensor x = test::TensorFrom({1, 4, 8}, [](std::int64_t i) { return test::Wave(i); });
  std::vector<double> expected;
  for (int row = 0; row < 4; ++row) {
    double mean = 0, var = 0;
    for (int c = 0; c < 8; ++c) mean += x.data[static_cast<std::size_t>(row * 8 + c)] / 8.0;
    for (int c = 0; c < 8; ++c) var += std::pow(x.data[static_cast<std::size_t>(row * 8 + c)] - mean, 2) / 8.0;
    for (int c = 0; c < 8; ++c) {
      const double bias = c == 0 ? 0.5 : c == 7 ? -0.5 : 0.0;
      expected.push_back((x.data[static_cast<std::size_t>(row * 8 + c)] - mean) / std::sqrt(var + 1e-5) * (c + 1) + bias);
    }
  }
  const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-4);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "layer_norm ") == 1);
  CHECK(test::StepsStartingWith(fused, "binary ") == 0);
}
