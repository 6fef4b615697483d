// The built-in library, quantized blocks (patterns/qdq.onnxtxt) in the QDQ
// form ONNX Runtime's static quantizer writes: the input dequantized, int8
// per-channel weights and an int32 bias through their own DequantizeLinear,
// each result quantized and dequantized again. Positive cases (exact groups,
// checked fused model, dumped for tests/e2e/pattern_numerics.sh) and a
// near-miss with its reason.
#include "pattern_library.h"

using namespace onnxfuse;
using namespace onnxfuse::test;

namespace {

// x [1,3,4,4] quantized to u8 and dequantized; a 1x1 Conv 3 -> 4 of int8
// weights (per output channel) and an int32 bias; `tail` reads the Conv's
// output `c` and writes y [1,4,4,4]; `extra` adds inputs to the signature.
std::string Quantized(const std::string& tail, const std::string& extra = "", const std::string& outputs = "") {
  const Strings inits = {"float xs = {0.02}", "uint8 xz = {128}",
                         "int8[4,3,1,1] wq = {12, -7, 3, 0, 127, -128, 5, 9, -2, 64, -64, 1}",
                         "float[4] ws = {0.01, 0.02, 0.015, 0.01}", "int8[4] wz = {0, 0, 0, 0}",
                         "int32[4] bq = {10, -20, 5, 0}", "float[4] bs = {0.0002, 0.0004, 0.0003, 0.0002}",
                         "float ys = {0.05}", "uint8 yz = {0}", "float ts = {0.04}", "uint8 tz = {128}"};
  const std::string body =
      "  xq = QuantizeLinear (x, xs, xz)\n  xd = DequantizeLinear (xq, xs, xz)\n"
      "  wd = DequantizeLinear <axis = 0> (wq, ws, wz)\n  bd = DequantizeLinear <axis = 0> (bq, bs)\n"
      "  c = Conv " + ConvAttrs(1) + " (xd, wd, bd)\n" + tail;
  return Model("(float[1,3,4,4] x" + extra + ") => (float[1,4,4,4] y" + outputs + ")", inits, body);
}

// The quantize-dequantize pair of `in` at scale `s`, zero point `z`, into `out`.
std::string Qdq(const std::string& in, const std::string& out, const std::string& s = "ys",
                const std::string& z = "yz") {
  return "  " + in + "_q = QuantizeLinear (" + in + ", " + s + ", " + z + ")\n  " + out + " = DequantizeLinear (" +
         in + "_q, " + s + ", " + z + ")\n";
}

// The shortcut: a [1,4,4,4] input quantized and dequantized.
const std::string kShortcut = "  rq = QuantizeLinear (r, ts, tz)\n  rd = DequantizeLinear (rq, ts, tz)\n";

}  // namespace

TEST_CASE("QdqConvRelu, QdqConvClip, QdqConv: a quantized Conv and its activation", "[pattern_library]") {
  SECTION("Relu") {
    auto f = FuseText(Quantized("  a = Relu (c)\n" + Qdq("a", "y")));
    CHECK(PatternGroups(f) == Strings{"QdqConvRelu: Conv_4, Relu_5, QuantizeLinear_6, DequantizeLinear_7"});
    CheckPositive("QdqConvRelu", f);
  }
  SECTION("Clip, its bounds from Constant nodes (outside the group)") {
    auto f = FuseText(Quantized("  lo = Constant <value = float {0.0}> ()\n  hi = Constant <value = float {6.0}> ()\n"
                                "  a = Clip (c, lo, hi)\n" + Qdq("a", "y")));
    CHECK(PatternGroups(f) == Strings{"QdqConvClip: Conv_4, Clip_7, QuantizeLinear_8, DequantizeLinear_9"});
    CheckPositive("QdqConvClip", f);
  }
  SECTION("no activation") {
    auto f = FuseText(Quantized(Qdq("c", "y")));
    CHECK(PatternGroups(f) == Strings{"QdqConv: Conv_4, QuantizeLinear_5, DequantizeLinear_6"});
    CheckPositive("QdqConv", f);
  }
  SECTION("near-miss: the Relu's float result is also a graph output; QdqConv cannot take it either") {
    auto f = FuseText(Quantized("  a = Relu (c)\n" + Qdq("a", "y"), "", ", float[1,4,4,4] a"));
    CHECK(PatternGroups(f).empty());
    CHECK(NearMiss(f, "QdqConvRelu", "DequantizeLinear_7") ==
          "intermediate_used_outside at Relu_5: intermediate 'a' of 'Relu_5' is a graph output");
  }
}

TEST_CASE("QdqConvAddRelu, QdqConvAdd: a quantized residual, the shortcut on either side", "[pattern_library]") {
  SECTION("ResNet's tail: Conv, Add, Relu, each quantized") {
    auto f = FuseText(Quantized(Qdq("c", "cd") + kShortcut + "  s = Add (rd, cd)\n" + Qdq("s", "sd") +
                                    "  a = Relu (sd)\n" + Qdq("a", "y"),
                                ", float[1,4,4,4] r"));
    CHECK(PatternGroups(f) == Strings{"QdqConvAddRelu: Conv_4, QuantizeLinear_5, DequantizeLinear_6, Add_9, "
                                      "QuantizeLinear_10, DequantizeLinear_11, Relu_12, QuantizeLinear_13, "
                                      "DequantizeLinear_14"});
    CheckPositive("QdqConvAddRelu", f);
  }
  SECTION("a linear bottleneck: Conv and Add, quantized") {
    auto f = FuseText(Quantized(Qdq("c", "cd") + kShortcut + "  s = Add (cd, rd)\n" + Qdq("s", "y"),
                                ", float[1,4,4,4] r"));
    CHECK(PatternGroups(f) ==
          Strings{"QdqConvAdd: Conv_4, QuantizeLinear_5, DequantizeLinear_6, Add_9, QuantizeLinear_10, "
                  "DequantizeLinear_11"});
    CheckPositive("QdqConvAdd", f);
  }
}

TEST_CASE("QdqConvSiLU: a quantized Conv, then x * Sigmoid(x) on its dequantized values", "[pattern_library]") {
  auto f = FuseText(Quantized(Qdq("c", "cd") + "  g = Sigmoid (cd)\n  m = Mul (g, cd)\n" + Qdq("m", "y")));
  CHECK(PatternGroups(f) == Strings{"QdqConvSiLU: Conv_4, QuantizeLinear_5, DequantizeLinear_6, Sigmoid_7, Mul_8, "
                                    "QuantizeLinear_9, DequantizeLinear_10"});
  CheckPositive("QdqConvSiLU", f);
}

TEST_CASE("QdqMatMulAdd, QdqMatMul: a quantized product of int8 weights, and its quantized bias", "[pattern_library]") {
  // x [2,3] quantized; a MatMul by int8 weights [3,4] per column; `tail` reads its output m.
  const auto product = [](const std::string& tail) {
    const Strings inits = {"float xs = {0.02}", "uint8 xz = {128}",
                           "int8[3,4] wq = {12, -7, 3, 0, 127, -128, 5, 9, -2, 64, -64, 1}",
                           "float[4] ws = {0.01, 0.02, 0.015, 0.01}", "float[4] bias = {0.1, -0.2, 0.3, 0.0}",
                           "float ys = {0.05}", "uint8 yz = {0}", "float ts = {0.04}", "uint8 tz = {128}"};
    const std::string body = "  xq = QuantizeLinear (x, xs, xz)\n  xd = DequantizeLinear (xq, xs, xz)\n"
                             "  wd = DequantizeLinear <axis = 1> (wq, ws)\n  m = MatMul (xd, wd)\n" + tail;
    return Model("(float[2,3] x) => (float[2,4] y)", inits, body);
  };
  SECTION("with its bias") {
    auto f = FuseText(product(Qdq("m", "md") + "  a = Add (md, bias)\n" + Qdq("a", "y", "ts", "tz")));
    CHECK(PatternGroups(f) == Strings{"QdqMatMulAdd: MatMul_3, QuantizeLinear_4, DequantizeLinear_5, Add_6, "
                                      "QuantizeLinear_7, DequantizeLinear_8"});
    CheckPositive("QdqMatMulAdd", f);
  }
  SECTION("alone") {
    auto f = FuseText(product(Qdq("m", "y")));
    CHECK(PatternGroups(f) == Strings{"QdqMatMul: MatMul_3, QuantizeLinear_4, DequantizeLinear_5"});
    CheckPositive("QdqMatMul", f);
  }
}
