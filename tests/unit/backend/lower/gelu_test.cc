// The Gelu (erf form) decomposition, Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5),
// found (MatchGelu) and lowered as one pass of our Gelu kernel (EmitGelu),
// src/backend/lower/gelu.cc. After an anchor's chain the chain runs the same
// kernel (chain_activation_test.cc).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "backend/lower/gelu.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// Gelu of x; of w with every commutative pair swapped; of u with 0.25 for the
// half; of v whose x / sqrt 2 is also a graph output.
const char* const kPatterns = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x, float[1,8] w, float[1,8] u, float[1,8] v)
  => (float[1,8] y, float[1,8] yw, float[1,8] yu, float[1,8] yv, float[1,8] qv) {
  r2 = Constant <value = float {1.4142135}> ()
  one = Constant <value = float {1.0}> ()
  half = Constant <value = float {0.5}> ()
  quarter = Constant <value = float {0.25}> ()
  q = Div (x, r2)
  e = Erf (q)
  e1 = Add (e, one)
  p = Mul (x, e1)
  y = Mul (p, half)
  qw = Div (w, r2)
  ew = Erf (qw)
  e1w = Add (one, ew)
  pw = Mul (e1w, w)
  yw = Mul (half, pw)
  qu = Div (u, r2)
  eu = Erf (qu)
  e1u = Add (eu, one)
  pu = Mul (u, e1u)
  yu = Mul (pu, quarter)
  qv = Div (v, r2)
  ev = Erf (qv)
  e1v = Add (ev, one)
  pv = Mul (v, e1v)
  yv = Mul (pv, half)
}
)";

}  // namespace

TEST_CASE("MatchGelu: the decomposition's output in either operand order, other constants or readers refused",
          "[gelu]") {
  Graph graph = test::GraphFromText(kPatterns);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  backend::Builder b(graph, true, engine);
  auto v = [&](const std::string& name) { return *graph.FindValue(name); };

  CHECK(backend::MatchGelu(b, v("x"), false) == v("y"));
  CHECK(backend::MatchGelu(b, v("w"), false) == v("yw"));
  CHECK_FALSE(backend::MatchGelu(b, v("u"), false));  // * 0.25
  CHECK_FALSE(backend::MatchGelu(b, v("v"), false));  // x / sqrt 2 read elsewhere
  CHECK_FALSE(backend::MatchGelu(b, v("q"), false));  // not a pattern's input
  for (std::size_t n = 0; n < graph.num_nodes(); ++n) CHECK_FALSE(b.absorbed[n]);

  // Absorbing: the five computing nodes, not the shared constants, and only once.
  CHECK(backend::MatchGelu(b, v("x"), true) == v("y"));
  for (const char* out : {"q", "e", "e1", "p", "y"}) CHECK(b.absorbed[graph.value(v(out)).producer]);
  for (const char* out : {"r2", "one", "half", "qw"}) CHECK_FALSE(b.absorbed[graph.value(v(out)).producer]);
  CHECK_FALSE(backend::MatchGelu(b, v("x"), false));
}

TEST_CASE("the Gelu decomposition of a graph input is one gelu step, exact to the erf formula", "[gelu][activation]") {
  // 2 x 3 x 37 values (a vector tail) over about [-6, 6]: erf saturates at both ends.
  const Tensor x = test::TensorFrom({2, 3, 37}, [](std::int64_t i) { return static_cast<float>(i % 97) / 8.f - 6.f; });
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,37] x) => (float[2,3,37] y) {
)" + test::GeluText("x", "y") + "}";
  std::vector<double> expected;
  for (float v : x.data) expected.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "gelu Div_1+Gelu onnxfuse:custom") == 1);
  CHECK(fused.stats.kernels == 1);
}
