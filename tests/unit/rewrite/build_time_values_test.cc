// Values known at build time (src/rewrite/build_time_values.cc): the
// condition and trip-count chains exporters write, against the values the
// ONNX operators give; and what stays unknown.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rewrite/build_time_values.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

std::optional<KnownTensor> Known(const Graph& graph, const std::string& name) {
  auto id = graph.FindValue(name);
  REQUIRE(id);
  return KnownValue(graph, *id);
}

Graph Model(const std::string& inputs, const std::string& body, const std::string& outputs = "bool r") {
  return test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 15]>
    g ()" + inputs + ") => (" + outputs + ") {\n" + body + "\n}");
}

}  // namespace

TEST_CASE("KnownValue reads the static dims a Shape picks, not the symbolic ones", "[rewrite][build_time_values]") {
  Graph graph = Model("float[N,3,H] x", R"(
      s = Shape (x)
      one = Constant <value = int64 {1}> ()
      two = Constant <value = int64 {2}> ()
      c = Gather <axis = 0> (s, one)
      h = Gather <axis = 0> (s, two)
      r = Greater (c, two)
      rh = Greater (h, two)
      tail = Shape <start = 1, end = 2> (x)
      q = Mul (tail, one))",
                      "bool r, bool rh, int64[1] q");
  auto r = Known(graph, "r");
  REQUIRE(r);
  CHECK(r->elem_type == onnx::TensorProto::BOOL);
  CHECK(r->values == std::vector<double>{1});
  CHECK_FALSE(Known(graph, "rh"));  // H is symbolic
  CHECK_FALSE(Known(graph, "s"));   // as a whole, the shape is not known
  auto q = Known(graph, "q");
  REQUIRE(q);
  CHECK(q->dims == std::vector<std::int64_t>{1});
  CHECK(q->values == std::vector<double>{3});
}

TEST_CASE("KnownValue computes the trip count of Range's expansion", "[rewrite][build_time_values]") {
  // ceil((limit - start) / delta), clipped at 0, as int64 and as the bool condition.
  Graph graph = Model("", R"(
      start = Constant <value = float {1.0}> ()
      limit = Constant <value = float {8.0}> ()
      delta = Constant <value = float {2.0}> ()
      d = Sub (limit, start)
      q = Div (d, delta)
      c = Ceil (q)
      p = Relu (c)
      n = Cast <to = 7> (p)
      r = Cast <to = 9> (p))",
                      "int64 n, bool r");
  CHECK(Known(graph, "n")->values == std::vector<double>{4});
  CHECK(Known(graph, "n")->elem_type == onnx::TensorProto::INT64);
  CHECK(Known(graph, "r")->values == std::vector<double>{1});
}

TEST_CASE("KnownValue follows integer semantics and logic", "[rewrite][build_time_values]") {
  Graph graph = Model("", R"(
      a = Constant <value = int64 {-7}> ()
      b = Constant <value = int64 {2}> ()
      z = Constant <value = int64 {0}> ()
      q = Div (a, b)
      bad = Div (a, z)
      f = Constant <value = float {-2.75}> ()
      t = Cast <to = 7> (f)
      v = Constant <value_ints = [2, 3, 4]> ()
      p = ReduceProd <keepdims = 0> (v)
      j = Concat <axis = 0> (v, v)
      e = Equal (t, z)
      r = Not (e)
      x = Xor (r, e))",
                      "int64 q, int64 bad, int64 t, int64 p, int64[6] j, bool x");
  CHECK(Known(graph, "q")->values == std::vector<double>{-3});  // truncated toward zero
  CHECK_FALSE(Known(graph, "bad"));                             // integer division by zero: left to run time
  CHECK(Known(graph, "t")->values == std::vector<double>{-2});
  CHECK(Known(graph, "p")->values == std::vector<double>{24});
  CHECK(Known(graph, "j")->values == std::vector<double>{2, 3, 4, 2, 3, 4});
  CHECK(Known(graph, "x")->values == std::vector<double>{1});
}

TEST_CASE("KnownValue does not know graph inputs or what they compute", "[rewrite][build_time_values]") {
  Graph graph = Model("int64 n", R"(
      one = Constant <value = int64 {1}> ()
      r = Greater (n, one))");
  CHECK_FALSE(Known(graph, "n"));
  CHECK_FALSE(Known(graph, "r"));
  CHECK(KnownScalar(graph, *graph.FindValue("one")) == 1.0);
}

TEST_CASE("KnownValue computes in the element type: integers exact and wrapped, float16 rounded",
          "[rewrite][build_time_values]") {
  Graph graph = Model("", R"(
      big = Constant <value = int64 {9007199254740993}> ()
      step = Constant <value = int64 {9007199254740992}> ()
      d = Sub (big, step)
      a = Constant <value = int8 {100}> ()
      w = Add (a, a)
      f = Constant <value = float {1.0001}> ()
      one = Constant <value = float {1.0}> ()
      h = Cast <to = 10> (f)
      h1 = Cast <to = 10> (one)
      r = Equal (h, h1))",
                      "int64 d, int8 w, bool r");
  CHECK(Known(graph, "d")->values == std::vector<double>{1});      // 2^53 + 1 - 2^53, exact in int64
  CHECK(Known(graph, "w")->values == std::vector<double>{-56});    // 200 wraps in int8
  CHECK(Known(graph, "w")->elem_type == onnx::TensorProto::INT8);
  CHECK(Known(graph, "r")->values == std::vector<double>{1});      // 1.0001 is 1.0 in float16
}

TEST_CASE("KnownValue knows a DOUBLE value only where float holds it exactly", "[rewrite][build_time_values]") {
  Graph graph = Model("", R"(
      tenth = Constant <value = double {0.1}> ()
      half = Constant <value = double {0.5}> ()
      quarter = Constant <value = double {0.25}> ()
      s = Add (half, quarter)
      g = Greater (half, quarter)
      m = Max (half, quarter))",
                      "double tenth, double s, bool g, double m");
  CHECK_FALSE(Known(graph, "tenth"));  // not a float
  CHECK_FALSE(Known(graph, "s"));      // a sum of doubles, which the evaluator would round to float
  CHECK(Known(graph, "g")->values == std::vector<double>{1});
  CHECK(Known(graph, "m")->values == std::vector<double>{0.5});
  CHECK(Known(graph, "m")->elem_type == onnx::TensorProto::DOUBLE);
}

TEST_CASE("KnownValue broadcasts operands as ONNX does, within the size bound", "[rewrite][build_time_values]") {
  std::string zeros;  // kMaxKnownElements of them: a known column
  for (std::int64_t i = 0; i < kMaxKnownElements; ++i) zeros += i ? ", 0" : "0";
  Graph graph = Model("", R"(
      col = Constant <value = int64[2,1] {1, 2}> ()
      row = Constant <value = int64[1,3] {10, 20, 30}> ()
      t = Add (col, row)
      tall = Constant <value = int64[)" + std::to_string(kMaxKnownElements) + ",1] {" + zeros + R"(}> ()
      wide = Add (tall, row))",
                      "int64[2,3] t, int64[" + std::to_string(kMaxKnownElements) + ",3] wide");
  auto t = Known(graph, "t");
  REQUIRE(t);
  CHECK(t->dims == std::vector<std::int64_t>{2, 3});
  CHECK(t->values == std::vector<double>{11, 21, 31, 12, 22, 32});
  CHECK(Known(graph, "tall"));
  CHECK_FALSE(Known(graph, "wide"));  // three times the bound
}
