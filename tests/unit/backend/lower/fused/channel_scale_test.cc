// Scales moved into their reader (src/backend/lower/fused/channel_scale.cc): a
// per-channel x * s into the weights of the Conv that alone reads it
// (DeferChannelScale, EmitScaledWeights), a scalar x * k or x / k into the
// result of the MatMul that alone reads it (DeferScalarScale). Which products
// are deferred is checked on a Builder directly; the numbers on plans.
// Squeeze-and-excitation blocks, whose gate this is: squeeze_excite_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "backend/lower/fused/channel_scale.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::Dims;

namespace {

// x [1,4,5,5] (100 elements) times its gate s [1,4,1,1]: deferred into a
// 1x1 Conv's 12 weights (a, gate first in b2); not into 288 weights (c), nor
// when another node reads the product (d), nor a group-2 Conv (e); x * x has
// no gate (f). q times or over scalars, read by MatMuls.
const char* const kGraph = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,5,5] x, float[1,4,1,1] s, float[3,4,1,1] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
   float[8,4,3,3] wbig, float[4,2,1,1] wg = {1, 2, 3, 4, 5, 6, 7, 8}, float[2,3] q, float[3,4] m,
   float[3,3] q3, float k = {4.0}, float z = {0.0})
  => (float[1,3,5,5] ya, float[1,3,5,5] yb, float[1,8,5,5] yc, float[1,3,5,5] yd, float[1,4,5,5] rd,
      float[1,4,5,5] ye, float[1,3,5,5] yf, float[2,4] ma, float[2,4] mb, float[2,4] mc, float[2,4] md,
      float[2,3] rn, float[2,4] mn, float[3,3] mq, float[2,4] mz) {
  a = Mul (x, s)
  ya = Conv (a, w)
  b2 = Mul (s, x)
  yb = Conv (b2, w)
  c = Mul (x, s)
  yc = Conv <pads = [1, 1, 1, 1]> (c, wbig)
  d = Mul (x, s)
  yd = Conv (d, w)
  rd = Relu (d)
  e = Mul (x, s)
  ye = Conv <group = 2> (e, wg)
  f = Mul (x, x)
  yf = Conv (f, w)
  qa = Div (q, k)
  ma = MatMul (qa, m)
  qb = Mul (k, q)
  mb = MatMul (qb, m)
  qc = Div (k, q)
  mc = MatMul (qc, m)
  qn = Mul (q, k)
  mn = MatMul (qn, m)
  rn = Relu (qn)
  qq = Mul (q3, k)
  mq = MatMul (qq, qq)
  qz = Mul (q, z)
  mz = MatMul (qz, m)
  md = MatMul (q, m)
}
)";

struct Fixture {
  explicit Fixture(bool fuse = true) : b(graph, fuse, engine) {
    for (const char* input : {"x", "s", "q", "q3"}) {
      const Dims& dims = graph.value(V(input)).type.dims;
      b.SetAct(V(input), b.NewAct(dims, backend::PlainDesc(dims)));
    }
  }
  Graph graph = test::GraphFromText(kGraph);
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  backend::Builder b;

  ValueId V(const std::string& name) const { return *graph.FindValue(name); }
  NodeId WriterId(const std::string& value) const { return graph.value(V(value)).producer; }
};

}  // namespace

TEST_CASE("x * s is deferred into the one group-1 Conv reading it, when its weights are no larger than x",
          "[channel_scale]") {
  Fixture f;
  CHECK(backend::DeferChannelScale(f.b, f.WriterId("a")));
  CHECK(backend::DeferChannelScale(f.b, f.WriterId("b2")));  // the gate first
  for (const char* product : {"c", "d", "e", "f", "qb"}) {
    INFO(product);
    CHECK_FALSE(backend::DeferChannelScale(f.b, f.WriterId(product)));
  }
  CHECK(f.b.deferred_scales.size() == 2);
  CHECK(f.b.steps.empty());
  CHECK(backend::ScaledInput(f.b, f.V("a")) == f.V("x"));
  CHECK(backend::ScaledInput(f.b, f.V("b2")) == f.V("x"));
  CHECK(backend::ScaledInput(f.b, f.V("c")) == f.V("c"));  // not deferred: itself

  // The reader takes s, plain, and the product is no longer deferred.
  const backend::Arg gate = backend::TakeChannelScale(f.b, f.V("a"));
  CHECK(gate.slot == f.b.ActOf(f.V("s"), f.graph.node(f.WriterId("a"))).slot);
  CHECK(gate.md.dims() == dnnl::memory::dims{1, 4, 1, 1});
  CHECK(f.b.deferred_scales.count(f.V("a")) == 0);
  CHECK(backend::ScaledInput(f.b, f.V("a")) == f.V("a"));

  Fixture unfused(false);
  CHECK_FALSE(backend::DeferChannelScale(unfused.b, unfused.WriterId("a")));
}

TEST_CASE("x * k and x / k are deferred into the one MatMul reading them, which multiplies by k or 1 / k",
          "[channel_scale]") {
  Fixture f;
  CHECK(backend::DeferScalarScale(f.b, f.WriterId("qa")));
  CHECK(backend::DeferScalarScale(f.b, f.WriterId("qb")));  // k first
  // k / q; q * k read by a Relu too; read twice by one MatMul; times 0; a Conv's gate.
  for (const char* product : {"qc", "qn", "qq", "qz", "a"}) {
    INFO(product);
    CHECK_FALSE(backend::DeferScalarScale(f.b, f.WriterId(product)));
  }
  CHECK(f.b.deferred_scalars.size() == 2);

  float scale = 3.f;
  CHECK(backend::TakeScalarScale(f.b, f.V("qa"), scale) == f.V("q"));
  CHECK(scale == 0.75f);
  CHECK(backend::TakeScalarScale(f.b, f.V("qb"), scale) == f.V("q"));
  CHECK(scale == 3.f);
  CHECK(backend::TakeScalarScale(f.b, f.V("qa"), scale) == f.V("qa"));  // taken once
  CHECK(scale == 3.f);
  CHECK(f.b.deferred_scalars.empty());

  Fixture unfused(false);
  CHECK_FALSE(backend::DeferScalarScale(unfused.b, unfused.WriterId("qa")));
}

TEST_CASE("a Conv reading x * s runs on weights scaled per input channel, never making the product",
          "[channel_scale]") {
  // y = Conv(x * s, w) + bias with s = Sigmoid(GlobalAveragePool(x)); w [3, 4, 1, 1].
  const std::vector<float> w = test::Floats(12, 0.5f, 1), bias = {0.25f, -0.5f, 0.125f};
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,5,5] x, float[3,4,1,1] w = )" + test::FloatList(w) + R"(, float[3] bias = )" + test::FloatList(bias) +
                           R"() => (float[1,3,5,5] y) {
      p = GlobalAveragePool (x)
      s = Sigmoid (p)
      g = Mul (x, s)
      y = Conv (g, w, bias)
    })";
  const Tensor x = test::TensorFrom({1, 4, 5, 5}, test::Wave);
  std::vector<double> gate(4, 0.0), expected;
  for (std::size_t c = 0; c < 4; ++c) {
    for (std::size_t p = 0; p < 25; ++p) gate[c] += x.data[c * 25 + p] / 25.0;
    gate[c] = 1 / (1 + std::exp(-gate[c]));
  }
  for (std::size_t o = 0; o < 3; ++o)
    for (std::size_t p = 0; p < 25; ++p) {
      double y = bias[o];
      for (std::size_t c = 0; c < 4; ++c) y += static_cast<double>(w[o * 4 + c]) * x.data[c * 25 + p] * gate[c];
      expected.push_back(y);
    }
  const test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "channel_scale Mul_2 (on the weights of ") == 1);
  CHECK(test::StepsStartingWith(fused, "binary ") == 0);
}

TEST_CASE("a MatMul reading q / k scales its result instead, never making the quotient", "[channel_scale]") {
  // y = (q / 4) m, q [2, 3], m [3, 4] constant.
  const std::vector<float> m = test::Floats(12, 1.0f, 2);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] q, float[3,4] m = )" + test::FloatList(m) + R"(, float k = {4.0}) => (float[2,4] y) {
      d = Div (q, k)
      y = MatMul (d, m)
    })";
  const Tensor q = test::TensorFrom({2, 3}, test::Wave, "q");
  std::vector<double> expected;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 4; ++c) {
      double y = 0;
      for (std::size_t i = 0; i < 3; ++i) y += q.data[r * 3 + i] / 4.0 * m[i * 4 + c];
      expected.push_back(y);
    }
  const test::PlanRun fused = test::CheckBoth(text, {q}, expected, 1e-5);
  INFO(test::StepList(fused));
  CHECK(fused.stats.kernels - fused.stats.reorders == 1);  // the MatMul alone
  CHECK(test::StepsContaining(fused, "Div_0") == 0);
}
