// The named predicates of `#@ require:` (patterns/pattern_predicates.h):
// validation against a function, each predicate's verdict and reason on
// graph values, and the attribute and constant helpers the matcher shares.
#include <catch2/catch.hpp>

#include <map>

#include <onnx/defs/parser.h>

#include "onnxfuse/error.h"
#include "patterns/pattern_predicates.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::detail;

namespace {

onnx::FunctionProto Function(const std::string& text) {
  onnx::FunctionProto f;
  const auto status = onnx::OnnxParser::Parse(f, text.c_str());
  if (!status.IsOK()) FAIL("function does not parse: " << status.ErrorMessage());
  return f;
}

PatternRequirement Require(std::string predicate, std::vector<std::string> args) {
  return PatternRequirement{std::move(predicate), std::move(args), 1};
}

// Binds wildcards to graph values by name ("" = omitted) and attributes to the given protos.
struct Binding {
  const Graph& graph;
  std::map<std::string, std::string> values;
  std::map<std::string, onnx::AttributeProto> attributes;

  PredicateBindings Bindings() const {
    return {[this](const std::string& arg) {
              const std::string& name = values.at(arg);
              return name.empty() ? kNoValue : *graph.FindValue(name);
            },
            [this](const std::string& attr) -> const onnx::AttributeProto* {
              auto it = attributes.find(attr);
              return it == attributes.end() ? nullptr : &it->second;
            }};
  }
  // "ok", or "reason: detail".
  std::string Check(const std::string& predicate, const std::vector<std::string>& args) const {
    auto failure = CheckRequirement(graph, Require(predicate, args), Bindings());
    return failure ? failure->reason + ": " + failure->detail : "ok";
  }
};

onnx::AttributeProto IntsAttr(const std::string& name, std::vector<std::int64_t> values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto IntAttr(const std::string& name, std::int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

const char* kValues = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,4,8,8] x, float[1,4,1,1] pc = {1.0, 2.0, 3.0, 4.0}, float[8] last = {1, 2, 3, 4, 5, 6, 7, 8},
     float[1] one = {2.0}, float[4,1,1] chw = {1, 2, 3, 4}, float[2,8] t, float[1,64,1,1] u, float[N,4,8,8] s,
     float[M,4,8,8] sm,
     float[4,1,3,3] dw, float[4,4,1,1] pw, float[4,4,3,3] full, float[4,4,3] conv1d)
    => (float[1,4,8,8] y) {
    k = Constant <value = float {0.5}> ()
    a = Mul (x, k)
    y = Relu (a)
  })";

}  // namespace

TEST_CASE("requirements are validated against the function's inputs and attributes", "[pattern_predicates]") {
  auto f = Function(R"(
    <domain: "ai.onnxfuse", opset_import: ["" : 13]>
    MeanRelu <axes> (X, S) => (Y) { m = ReduceMean <axes = @axes> (X)  Y = Mul (m, S) })");
  CHECK_FALSE(ValidateRequirement(Require("constant", {"S"}), f));
  CHECK_FALSE(ValidateRequirement(Require("last_axis", {"axes", "X"}), f));

  auto unknown = ValidateRequirement(Require("positive", {"S"}), f);
  REQUIRE(unknown);
  CHECK(unknown->first == std::string::npos);
  CHECK(unknown->second == "unknown predicate 'positive' (known: constant(X, ...), scalar(X, ...), same_shape(A, B), "
                           "per_channel(S, X), last_axis(attr, X), kernel_1x1(W), kernel_3x3(W), depthwise(attr, W))");
  auto count = ValidateRequirement(Require("same_shape", {"X"}), f);
  CHECK(count->second == "same_shape takes 2 arguments: same_shape(A, B)");
  CHECK(ValidateRequirement(Require("scalar", {}), f)->second == "scalar takes one or more arguments: scalar(X, ...)");
  auto not_input = ValidateRequirement(Require("constant", {"S", "Q"}), f);
  CHECK(not_input->first == 1);
  CHECK(not_input->second == "'Q' is not an input of MeanRelu (inputs: X, S)");
  auto not_attribute = ValidateRequirement(Require("last_axis", {"X", "X"}), f);
  CHECK(not_attribute->first == 0);
  CHECK(not_attribute->second == "'X' is not an attribute of MeanRelu (attributes: axes)");
}

TEST_CASE("constant and scalar", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(kValues);
  Binding b{graph, {{"W", "pc"}, {"K", "k"}, {"X", "x"}, {"A", "a"}, {"O", "one"}, {"B", ""}}, {}};
  CHECK(b.Check("constant", {"W", "K", "B"}) == "ok");  // an omitted input passes
  CHECK(b.Check("constant", {"W", "X"}) == "not_constant: X ('x') is not a constant: it is a graph input");
  CHECK(b.Check("constant", {"A"}) == "not_constant: A ('a') is not a constant: it is computed by 'Mul_1' (Mul)");
  CHECK(b.Check("scalar", {"O", "K"}) == "ok");
  CHECK(b.Check("scalar", {"W"}) == "not_scalar: W ('pc') has shape [1,4,1,1], not one element");
  CHECK(b.Check("scalar", {"X"}) == "not_scalar: X ('x') is not a constant: it is a graph input");
  CHECK(b.Check("scalar", {"B"}) == "not_scalar: B is omitted (an absent optional input)");
}

TEST_CASE("constant: an Identity chain of a constant is one (a shared parameter)", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4] x, float[4] w = {1, 2, 3, 4}) => (float[4] y) {
    i1 = Identity (w)
    i2 = Identity (i1)
    ix = Identity (x)
    s = Add (x, i2)
    y = Mul (s, ix)
  })");
  Binding b{graph, {{"W", "i2"}, {"X", "ix"}}, {}};
  CHECK(b.Check("constant", {"W"}) == "ok");
  CHECK(b.Check("constant", {"X"}) == "not_constant: X ('ix') is not a constant: it is computed by 'Identity_2' (Identity)");
}

TEST_CASE("same_shape refuses broadcasting and shapes not known to be equal", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(kValues);
  Binding b{graph, {{"X", "x"}, {"A", "a"}, {"U", "u"}, {"S", "s"}, {"M", "sm"}}, {}};
  CHECK(b.Check("same_shape", {"X", "A"}) == "ok");
  CHECK(b.Check("same_shape", {"X", "U"}) == "shapes_differ: shapes differ: X ('x') is [1,4,8,8] vs U ('u') [1,64,1,1]");
  CHECK(b.Check("same_shape", {"S", "S"}) == "ok");  // one symbol: equal at every N
  CHECK(b.Check("same_shape", {"S", "M"}) ==
        "shapes_differ: shapes differ: S ('s') is [N,4,8,8] vs M ('sm') [M,4,8,8]");
}

TEST_CASE("per_channel: broadcast along axis 1 only, numpy-aligned", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(kValues);
  Binding b{graph, {{"X", "x"}, {"PC", "pc"}, {"CHW", "chw"}, {"L", "last"}, {"O", "one"}, {"T", "t"}}, {}};
  CHECK(b.Check("per_channel", {"PC", "X"}) == "ok");
  CHECK(b.Check("per_channel", {"CHW", "X"}) == "ok");
  CHECK(b.Check("per_channel", {"O", "X"}) == "ok");  // [1] broadcasts uniformly
  CHECK(b.Check("per_channel", {"L", "X"}) ==
        "not_per_channel: L ('last') of shape [8] does not broadcast along axis 1 only of X ('x') [1,4,8,8]");
  CHECK(b.Check("per_channel", {"X", "T"}) ==
        "not_per_channel: X ('x') of shape [1,4,8,8] does not broadcast along axis 1 only of T ('t') [2,8]");
}

TEST_CASE("last_axis: the captured axes name the last axis of X", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(kValues);
  Binding b{graph, {{"T", "t"}}, {{"minus_one", IntsAttr("minus_one", {-1})}, {"one", IntsAttr("one", {1})},
                                  {"zero", IntsAttr("zero", {0})}, {"single", IntAttr("single", 1)}}};
  CHECK(b.Check("last_axis", {"minus_one", "T"}) == "ok");
  CHECK(b.Check("last_axis", {"one", "T"}) == "ok");
  CHECK(b.Check("last_axis", {"single", "T"}) == "ok");  // an int attribute (Softmax's axis)
  CHECK(b.Check("last_axis", {"zero", "T"}) == "not_last_axis: zero is [0], not the last axis of T ('t') [2,8]");
  CHECK(b.Check("last_axis", {"absent", "T"}) == "not_last_axis: absent is absent (all axes)");
}

TEST_CASE("kernel_1x1, kernel_3x3 and depthwise read the weight's shape", "[pattern_predicates]") {
  Graph graph = test::GraphFromText(kValues);
  Binding b{graph,
            {{"DW", "dw"}, {"PW", "pw"}, {"F", "full"}, {"C1", "conv1d"}, {"X", "s"}},
            {{"four", IntAttr("four", 4)}, {"two", IntAttr("two", 2)}}};
  CHECK(b.Check("kernel_1x1", {"PW"}) == "ok");
  CHECK(b.Check("kernel_1x1", {"F"}) ==
        "not_1x1: F ('full') of shape [4,4,3,3] is not a 1x1 kernel (spatial dims all 1)");
  CHECK(b.Check("kernel_3x3", {"F"}) == "ok");
  CHECK(b.Check("kernel_3x3", {"C1"}) ==
        "not_3x3: C1 ('conv1d') of shape [4,4,3] is not a 3x3 kernel (4-D, spatial dims 3, 3)");
  CHECK(b.Check("depthwise", {"four", "DW"}) == "ok");
  CHECK(b.Check("depthwise", {"two", "DW"}) ==
        "not_depthwise: two 2 with DW ('dw') of shape [4,1,3,3] is not depthwise (needs W [M, 1, ...] and group = M)");
  CHECK(b.Check("depthwise", {"group", "PW"}) ==
        "not_depthwise: group absent (1) with PW ('pw') of shape [4,4,1,1] is not depthwise (needs W [M, 1, ...] "
        "and group = M)");
  CHECK(b.Check("depthwise", {"four", "X"}) ==
        "not_depthwise: the shape of X ('s') [N,4,8,8] is not a known convolution weight shape");
}

TEST_CASE("attribute values: types inferred, compared within tolerance, printed", "[pattern_predicates]") {
  CHECK(Near(1.0 / 6, 0.1666667, kAttributeTolerance));
  CHECK_FALSE(Near(1.0, 1.001, kAttributeTolerance));
  CHECK(Near(0.0, 0.0, 0.0));

  onnx::AttributeProto untyped;  // pre-IR-2: no type field
  untyped.set_f(0.5f);
  CHECK(TypeOf(untyped) == onnx::AttributeProto::FLOAT);
  onnx::AttributeProto typed = untyped;
  typed.set_type(onnx::AttributeProto::FLOAT);
  typed.set_f(0.5000001f);
  CHECK(AttrEqual(untyped, typed));
  CHECK_FALSE(AttrEqual(IntAttr("a", 1), IntsAttr("a", {1})));
  CHECK(AttrEqual(IntsAttr("a", {1, 2}), IntsAttr("b", {1, 2})));  // names are not compared
  CHECK_FALSE(AttrEqual(IntsAttr("a", {1, 2}), IntsAttr("a", {1, 2, 3})));

  onnx::AttributeProto s;
  s.set_type(onnx::AttributeProto::STRING);
  s.set_s("SAME_UPPER");
  CHECK(AttrText(s) == "'SAME_UPPER'");
  CHECK(AttrText(IntsAttr("p", {1, 1})) == "[1,1]");
  CHECK(AttrText(IntAttr("g", 2)) == "2");
  CHECK(AttrText(typed) == "0.5");
  onnx::AttributeProto t;
  t.set_type(onnx::AttributeProto::TENSOR);
  CHECK(AttrText(t) == "<TENSOR>");
}

TEST_CASE("one-number constants: tensors, initializers and Constant spellings", "[pattern_predicates]") {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT32);
  t.add_dims(1);
  t.add_dims(1);
  t.add_int32_data(-3);
  CHECK(SingleNumber(t) == -3.0);
  t.add_dims(2);
  CHECK_FALSE(SingleNumber(t));  // two elements
  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_int32_data(0x3c00);
  CHECK_FALSE(SingleNumber(h));  // float16 is not read

  Graph graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, double[1] d = {0.25}) => (float[2] y, int64 n) {
      f = Constant <value_float = 1.5> ()
      n = Constant <value_int = 7> ()
      k = Constant <value = float[2] {1, 2}> ()
      a = Add (x, f)
      y = Mul (a, k)
    })");
  auto number = [&](const std::string& name) { return ConstantScalar(graph, *graph.FindValue(name)); };
  REQUIRE(number("d"));
  CHECK(number("d")->value == 0.25);
  CHECK(number("d")->elem_type == onnx::TensorProto::DOUBLE);
  CHECK(number("d")->rank == 1);
  CHECK(number("f")->value == 1.5);
  CHECK(number("f")->rank == 0);
  CHECK(number("n")->value == 7.0);
  CHECK(number("n")->elem_type == onnx::TensorProto::INT64);
  CHECK_FALSE(number("k"));  // two elements
  CHECK_FALSE(number("x"));  // not a constant
  CHECK_FALSE(ConstantScalar(graph, kNoValue));
}
