// The lowerings' questions about the graph (src/backend/lower/core/graph_queries.cc):
// the sole reader of a value, the other input of a binary node, constants near
// a value, a Conv reading a value as its data, the pooling ops.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "backend/lower/core/graph_queries.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x is read four times; r once, by Sigmoid; e once, by Neg, but e is also a
// graph output; k a constant scalar, k4 a constant of four values.
const char* const kGraph = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[3,2,1,1] w = {1, 2, 3, 4, 5, 6}, float[3,2,1,1] wi, float[4,1,1,1] wg = {1, 2, 3, 4},
   float k = {2.0}, float[4] k4 = {1, 2, 3, 4}, float[1,2,4,4] u)
  => (float[1,2,4,4] y, float[1,2,4,4] e, float[1,2,4,4] n, float[1,3,4,4] c, float[1,3,4,4] ci,
      float[1,4,4,4] cg, float[1,2,4,4] m, float[1,2,4,4] a) {
  r = Relu (x)
  y = Sigmoid (r)
  e = Exp (x)
  n = Neg (e)
  c = Conv (x, w)
  ci = Conv (x, wi)
  cg = Conv <group = 2> (x, wg)
  m = Mul (u, k)
  a = Add (u, k4)
}
)";

struct Fixture {
  Graph graph = test::GraphFromText(kGraph);
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  backend::Builder b{graph, true, engine};

  ValueId V(const std::string& name) const { return *graph.FindValue(name); }
  const Node& Writer(const std::string& value) const { return graph.node(graph.value(V(value)).producer); }
};

}  // namespace

TEST_CASE("SoleUser: the one reader of a value of the given op, not absorbed, the value no graph output",
          "[graph_queries]") {
  Fixture f;
  const Node& sigmoid = f.Writer("y");
  CHECK(backend::SoleUser(f.b, f.V("r"), "Sigmoid") == &sigmoid);
  CHECK(backend::SoleUser(f.b, f.V("r"), "Relu") == nullptr);    // another op
  CHECK(backend::SoleUser(f.b, f.V("x"), "Relu") == nullptr);    // five readers
  CHECK(backend::SoleUser(f.b, f.V("e"), "Neg") == nullptr);     // a graph output too
  CHECK(backend::SoleUser(f.b, f.V("y"), "Sigmoid") == nullptr);  // no reader
  f.b.absorbed[f.graph.value(f.V("y")).producer] = true;
  CHECK(backend::SoleUser(f.b, f.V("r"), "Sigmoid") == nullptr);
}

TEST_CASE("OtherInput: the other input of a two-input node", "[graph_queries]") {
  Fixture f;
  const Node& mul = f.Writer("m");
  CHECK(backend::OtherInput(mul, f.V("u")) == f.V("k"));
  CHECK(backend::OtherInput(mul, f.V("k")) == f.V("u"));
  CHECK(backend::OtherInput(mul, f.V("x")) == kNoValue);
  CHECK(backend::OtherInput(f.Writer("r"), f.V("x")) == kNoValue);  // one input
}

TEST_CASE("ConstNear: a constant float scalar within a tolerance, or any with NaN", "[graph_queries]") {
  Fixture f;
  const Node& mul = f.Writer("m");  // the reader named in errors
  CHECK(backend::ConstNear(f.b, f.V("k"), mul, 2.0, 1e-6));
  CHECK(backend::ConstNear(f.b, f.V("k"), mul, 2.05, 0.1));
  CHECK_FALSE(backend::ConstNear(f.b, f.V("k"), mul, 2.5, 0.1));
  double value = 0;
  CHECK(backend::ConstNear(f.b, f.V("k"), mul, std::numeric_limits<double>::quiet_NaN(), 0, &value));
  CHECK(value == 2.0);
  CHECK_FALSE(backend::ConstNear(f.b, f.V("k4"), mul, 1.0, 10));  // four values
  CHECK_FALSE(backend::ConstNear(f.b, f.V("u"), mul, 1.0, 10));   // computed at run time
  CHECK_FALSE(backend::ConstNear(f.b, kNoValue, mul, 1.0, 10));
}

TEST_CASE("ConvReadsAsData: a group-1 Conv with constant weights reading the value as X", "[graph_queries]") {
  Fixture f;
  CHECK(backend::ConvReadsAsData(f.b, f.Writer("c"), f.V("x")));
  CHECK_FALSE(backend::ConvReadsAsData(f.b, f.Writer("c"), f.V("w")));   // read as the weights
  CHECK_FALSE(backend::ConvReadsAsData(f.b, f.Writer("ci"), f.V("x")));  // weights not constant
  CHECK_FALSE(backend::ConvReadsAsData(f.b, f.Writer("cg"), f.V("x")));  // group 2
  CHECK_FALSE(backend::ConvReadsAsData(f.b, f.Writer("r"), f.V("x")));   // not a Conv
}

TEST_CASE("IsPooling: the four pooling ops EmitPool lowers", "[graph_queries]") {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) CHECK(backend::IsPooling(op));
  for (const char* op : {"LpPool", "GlobalLpPool", "MaxRoiPool", "Conv", "ReduceMean"}) CHECK_FALSE(backend::IsPooling(op));
}
