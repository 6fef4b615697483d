#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "patterns/pattern.h"
#include "temp_dir.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;

namespace {

// The message of the Error ParsePatterns throws for `text` (as file "p.onnxtxt").
std::string ParseError(const std::string& text) {
  try {
    ParsePatterns(text, "p.onnxtxt");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    return e.what();
  }
  return "(no error)";
}

const char* kHeader = "<domain: \"ai.onnxfuse\", opset_import: [\"\" : 13]>\n";

}  // namespace

TEST_CASE("the built-in library loads with its directives and captured attributes", "[pattern_file]") {
  auto patterns = LoadPatternDir(BuiltinPatternDir());
  Strings names;
  for (const auto& p : patterns) names.push_back(p.function.name());
  // Files sorted by name, functions in file order.
  CHECK(names == Strings{"AddRelu", "ConvBnClip", "ConvBnHardSigmoidMul", "ConvBnHardSwish", "ConvBnRelu", "ConvBn",
                         "ConvBnSiLU", "Gelu",
                         "InvertedResidualBnReluAdd", "InvertedResidualBnRelu", "InvertedResidualBnClipAdd",
                         "InvertedResidualBnClip", "InvertedResidualBnHardSigmoidMulAdd",
                         "InvertedResidualBnHardSigmoidMul", "InvertedResidualBnHardSwishAdd",
                         "InvertedResidualBnHardSwish", "LayerNormalization", "MatMulAddGelu", "MatMulAddAdd", "MatMulAdd",
                         "PwDwConvBnRelu", "PwDwConvBnClip", "PwDwConvBnHardSigmoidMul", "PwDwConvBnHardSwish",
                         "PwDwConvBnSiLU", "QdqConvAddRelu", "QdqConvAdd", "QdqConvSiLU", "QdqConvRelu", "QdqConvClip",
                         "QdqConv", "QdqMatMulAdd", "QdqMatMul", "ConvBnAddRelu", "ConvAddRelu", "ConvBnAdd", "SoftmaxLog", "SEReluSigmoid",
                         "SEReluHardSigmoid", "SESiLUSigmoid", "SESiLUHardSigmoid"});

  const Pattern& cbr = patterns[4];
  CHECK(cbr.function.name() == "ConvBnRelu");
  CHECK(cbr.file == BuiltinPatternDir() + "/conv_bn_relu.onnxtxt");
  CHECK(cbr.line == 18);
  CHECK(cbr.benefit == 40);
  REQUIRE(cbr.requirements.size() == 1);
  CHECK(cbr.requirements[0].predicate == "constant");
  CHECK(cbr.requirements[0].args == Strings{"W", "B", "scale", "bias", "mean", "var"});
  CHECK(cbr.requirements[0].line == 17);
  CHECK(cbr.function.domain() == "ai.onnxfuse");
  CHECK(cbr.function.attribute_size() == 8);
  // `strides = @strides` gets its type from Conv's schema, as ONNX requires of a reference.
  const auto& conv = cbr.function.node(0);
  for (const auto& attr : conv.attribute()) {
    CHECK(attr.ref_attr_name() == attr.name());
    CHECK(attr.type() != onnx::AttributeProto::UNDEFINED);
  }
  CHECK(conv.attribute(0).type() == onnx::AttributeProto::STRING);  // auto_pad
  CHECK(conv.attribute(5).type() == onnx::AttributeProto::INTS);    // strides
}

TEST_CASE("several functions per file, each with its own directives", "[pattern_file]") {
  std::string text = std::string("# a library\n") +
                     "#@ benefit: 7\n"
                     "#@ require: same_shape(A, B)\n"
                     "# an ordinary comment between directives\n"
                     "#@ require:   constant( B )\n" +
                     kHeader +
                     "AddRelu (A, B) => (Y) {\n"
                     "  s = Add (A, B)   # comments inside the body too\n"
                     "  Y = Relu (s)\n"
                     "}\n"
                     "\n"
                     "#@ benefit: -2\n" +
                     kHeader +
                     "MulAdd <axis> (A, B, C) => (Y) {\n"
                     "  m = Mul (A, B)\n"
                     "  t = Softmax <axis = @axis> (A)\n"
                     "  Y = Add (m, C)\n"
                     "}\n";
  // MulAdd's Softmax does not feed its last node.
  CHECK(ParseError(text) == "p.onnxtxt:16:7: Softmax: does not feed the last node (the matcher anchors there and walks back)");

  text.erase(text.find("  t = Softmax"), std::string("  t = Softmax <axis = @axis> (A)\n").size());
  text.replace(text.find("MulAdd <axis>"), 13, "MulAdd");
  auto patterns = ParsePatterns(text, "p.onnxtxt");
  REQUIRE(patterns.size() == 2);
  CHECK(patterns[0].function.name() == "AddRelu");
  CHECK(patterns[0].benefit == 7);
  CHECK(patterns[0].line == 6);
  REQUIRE(patterns[0].requirements.size() == 2);
  CHECK(patterns[0].requirements[0].predicate == "same_shape");
  CHECK(patterns[0].requirements[0].args == Strings{"A", "B"});
  CHECK(patterns[0].requirements[1].args == Strings{"B"});
  CHECK(patterns[0].requirements[1].line == 5);
  CHECK(patterns[1].function.name() == "MulAdd");
  CHECK(patterns[1].benefit == -2);
  CHECK(patterns[1].requirements.empty());
  CHECK(patterns[1].line == 13);
  CHECK(patterns[1].file == "p.onnxtxt");
}

TEST_CASE("syntax errors name the file's line and column", "[pattern_file]") {
  std::string good = std::string(kHeader) + "F (X) => (Y) {\n  Y = Relu (X)\n}\n";
  // Line 8 of the file is line 3 of the second function's chunk.
  CHECK(ParseError(good + "\n" + kHeader + "G (X) => (Y) {\n  Y = Relu <alpha = > (X)\n}\n") ==
        "p.onnxtxt:8:21: syntax error: Unexpected literal type.");
  CHECK(ParseError(good + kHeader + "G (X) => (Y) {\n  Y = Relu (X\n}\n") ==
        "p.onnxtxt:8:1: syntax error: Expected character ) not found.");
  CHECK(ParseError(good + "Relu (X)\n") ==
        "p.onnxtxt:5:1: unexpected text after function F (a function header must begin its line with '<')");
  CHECK(ParseError("  F (X) => (Y) {}\n") ==
        "p.onnxtxt:1:3: expected a '#@' directive or a function header ('<domain: \"ai.onnxfuse\", ...>' at column 1)");
}

TEST_CASE("directive errors name line and column", "[pattern_file]") {
  auto with = [](const std::string& directive) {
    return directive + "\n" + kHeader + "F (X, W) => (Y) {\n  Y = Conv (X, W)\n}\n";
  };
  CHECK(ParseError(with("#@ require: constnt(W)")) ==
        "p.onnxtxt:1:13: unknown predicate 'constnt' (known: constant(X, ...), scalar(X, ...), same_shape(A, B), "
        "per_channel(S, X), last_axis(attr, X), kernel_1x1(W), kernel_3x3(W), depthwise(attr, W))");
  CHECK(ParseError(with("#@ require: constant(X, Wt)")) == "p.onnxtxt:1:25: 'Wt' is not an input of F (inputs: X, W)");
  CHECK(ParseError(with("#@ require: same_shape(X)")) == "p.onnxtxt:1:13: same_shape takes 2 arguments: same_shape(A, B)");
  CHECK(ParseError(with("#@ require: last_axis(axes, X)")) ==
        "p.onnxtxt:1:23: 'axes' is not an attribute of F (attributes: )");
  CHECK(ParseError(with("#@ require: constant(W")) == "p.onnxtxt:1:23: expected ',' or ')'");
  CHECK(ParseError(with("#@ benefit: high")) == "p.onnxtxt:1:13: benefit must be an integer, got 'high'");
  CHECK(ParseError(with("#@ benefit: 1\n#@ benefit: 2")) == "p.onnxtxt:2:4: benefit is given twice");
  CHECK(ParseError(with("#@ priority: 3")) == "p.onnxtxt:1:4: unknown directive 'priority' (known: benefit, require)");
  CHECK(ParseError(with("") + "#@ benefit: 3\n") == "p.onnxtxt:6:1: a '#@' directive must be followed by a function");
  CHECK(ParseError(std::string(kHeader) + "F (X) => (Y) {\n  #@ benefit: 3\n  Y = Relu (X)\n}\n") ==
        "p.onnxtxt:3:3: a '#@' directive inside a function body; put it before the header");
}

TEST_CASE("functions are validated against the operator schemas", "[pattern_file]") {
  auto fn = [](const std::string& signature, const std::string& body) {
    return std::string(kHeader) + signature + " {\n" + body + "}\n";
  };
  CHECK(ParseError("<domain: \"custom\", opset_import: [\"\" : 13]>\nF (X) => (Y) {\n  Y = Relu (X)\n}\n") ==
        "p.onnxtxt:1:1: function F is in domain 'custom'; patterns must be in domain \"ai.onnxfuse\"");
  CHECK(ParseError(fn("F (X) => (Y)", "")) == "p.onnxtxt:1:1: function F has an empty body");
  CHECK(ParseError(fn("F (X) => (Y)", "  r = Relu (X)\n  Y = Rleu (r)\n")) ==
        "p.onnxtxt:4:7: Rleu: not an operator of the default domain at opset 13");
  CHECK(ParseError(fn("F (X) => (Y)", "  Y = HardSwish (X)\n")) ==
        "p.onnxtxt:3:7: HardSwish: not an operator of the default domain at opset 13");  // since opset 14
  CHECK(ParseError(fn("F (X, W) => (Y)", "  Y = Conv <stride = [2, 2]> (X, W)\n")) ==
        "p.onnxtxt:3:7: Conv: has no attribute 'stride' at opset 13");
  CHECK(ParseError(fn("F (X, W) => (Y)", "  Y = Conv <group = 1.5> (X, W)\n")) ==
        "p.onnxtxt:3:7: Conv: attribute 'group' must be of type INT, not FLOAT");
  CHECK(ParseError(fn("F (X, W) => (Y)", "  Y = Conv <strides = @strides> (X, W)\n")) ==
        "p.onnxtxt:3:7: Conv: @strides is not an attribute of F (list it in the header's <...>)");
  CHECK(ParseError(fn("F <group> (X, W) => (Y)", "  Y = Conv (X, W)\n")) ==
        "p.onnxtxt:1:1: attribute 'group' of F is never referenced (@group)");
  CHECK(ParseError(fn("F (X, W) => (Y)", "  Y = Relu (X)\n")) == "p.onnxtxt:1:1: input 'W' of F is not used");
  CHECK(ParseError(fn("F (X) => (Y)", "  Y = Relu (Z)\n")) ==
        "p.onnxtxt:3:7: Relu: 'Z' is neither an input of F nor the output of an earlier node");
  CHECK(ParseError(fn("F (X) => (Y)", "  k = Constant <value = float[2] {1.0, 2.0}> ()\n  Y = Div (X, k)\n")) ==
        "p.onnxtxt:3:7: Constant: a Constant in a pattern body must be `Constant <value = float {1.0}> ()`: one number");
  CHECK(ParseError(fn("F (X) => (Y, Z)", "  Y = Relu (X)\n")) ==
        "p.onnxtxt:1:1: output 'Z' of F is not produced by a body node");
  // Output counts: `Y, = ...` names two outputs (a fuzz find), BatchNormalization takes 1 or 3.
  CHECK_THAT(ParseError(fn("F (X) => (Y)", "  Y, = Relu (X)\n")),
             Catch::StartsWith("p.onnxtxt:3:8: Relu: has 1 to 1 outputs, the body names 2"));
  CHECK_THAT(ParseError(fn("F (X, s, b, m, v) => (Y)", "  Y, mean = BatchNormalization (X, s, b, m, v)\n")),
             Catch::Contains("BatchNormalization: the operator's schema refuses the node"));
}

TEST_CASE("a pattern directory: sorted files, names unique across files", "[pattern_file]") {
  test::TempDir dir("pattern_dir");
  dir.Write("b.onnxtxt", std::string(kHeader) + "Second (X) => (Y) {\n  Y = Relu (X)\n}\n");
  dir.Write("a.onnxtxt", std::string("\n") + kHeader + "First (X) => (Y) {\n  Y = Sigmoid (X)\n}\n");
  dir.Write("notes.txt", "not a pattern");
  auto patterns = LoadPatternDir(dir.path.string());
  REQUIRE(patterns.size() == 2);
  CHECK(patterns[0].function.name() == "First");
  CHECK(patterns[0].line == 2);
  CHECK(patterns[1].function.name() == "Second");

  dir.Write("c.onnxtxt", std::string(kHeader) + "First (X) => (Y) {\n  Y = Tanh (X)\n}\n");
  std::string a = (dir.path / "a.onnxtxt").string();
  std::string c = (dir.path / "c.onnxtxt").string();
  CHECK_THROWS_WITH(LoadPatternDir(dir.path.string()), c + ":1:1: pattern First is already defined at " + a + ":2");
  CHECK(ParseError(std::string(kHeader) + "F (X) => (Y) {\n  Y = Relu (X)\n}\n" + kHeader +
                   "F (X) => (Y) {\n  Y = Tanh (X)\n}\n") == "p.onnxtxt:5:1: pattern F is already defined at line 1");

  try {
    LoadPatternDir((dir.path / "missing").string());
    FAIL("no error for a missing directory");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kIo);
    CHECK_THAT(e.what(), Catch::StartsWith((dir.path / "missing").string() + ": cannot read pattern directory"));
  }
}

TEST_CASE("ONNXFUSE_PATTERNS_DIR overrides the built-in directory", "[pattern_file]") {
  const char* outer = std::getenv("ONNXFUSE_PATTERNS_DIR");
  std::string saved = outer ? outer : "";
  ::unsetenv("ONNXFUSE_PATTERNS_DIR");
  std::string compiled = BuiltinPatternDir();
  CHECK(std::filesystem::exists(std::filesystem::path(compiled) / "conv_bn_relu.onnxtxt"));
  ::setenv("ONNXFUSE_PATTERNS_DIR", "/elsewhere", 1);
  CHECK(BuiltinPatternDir() == "/elsewhere");
  if (saved.empty()) ::unsetenv("ONNXFUSE_PATTERNS_DIR");
  else ::setenv("ONNXFUSE_PATTERNS_DIR", saved.c_str(), 1);
}
