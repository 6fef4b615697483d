// int8 convolutions of the QDQ format (src/backend/lower/fused/int8_conv.cc):
// DequantizeLinear -> Conv (DequantizeLinear weights and bias) [-> Relu |
// Clip] [-> QuantizeLinear] lowered in fused mode as one oneDNN int8
// convolution, against the unfused plan, which runs the ONNX definition
// (host steps for QuantizeLinear and DequantizeLinear around a float
// convolution). The two differ only where a float32 result lies at a
// rounding boundary of the QuantizeLinear: at most one step there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/lower/core/onednn_limits.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

struct Case {
  std::string name;
  std::string src_type = "uint8";  // x's quantized type
  int src_zero = 128;
  int channels = 16, outputs = 8, group = 1, stride = 1;
  int kernel = 3, pad = 1, side = 9;  // kernel x kernel over side x side, pads on every border
  int weight_max = 64;           // |w| <= weight_max
  std::string activation = "Relu";  // "Relu", "Clip" (0..6), "Mul" (by 0.5), "Clip Clip" (0..6, 0..3) or ""
  bool requantize = true;           // a QuantizeLinear ends the chain
  std::string dst_type = "uint8";
  int dst_zero = 0;
};

std::string List(const std::vector<std::string>& values) {
  std::string s;
  for (const std::string& v : values) s += (s.empty() ? "" : ", ") + v;
  return s;
}

// x [1, C, side, side] -> Q -> DQ -> Conv -> activation [-> Q -> DQ] -> y, as ONNX text.
std::string ModelText(const Case& c) {
  const int per_group = c.channels / c.group, outputs = c.outputs, k = c.kernel;
  const int out_side = (c.side + 2 * c.pad - k) / c.stride + 1;
  std::vector<std::string> w, ws, wz, b, bs;
  const float sx = 0.05f;
  for (int i = 0; i < outputs * per_group * k * k; ++i)
    w.push_back(std::to_string((i * 37 + 11) % (2 * c.weight_max + 1) - c.weight_max));
  for (int o = 0; o < outputs; ++o) {
    const float scale = 0.002f * static_cast<float>(1 + o % 5);
    ws.push_back(std::to_string(scale));
    wz.push_back("0");
    b.push_back(std::to_string((o * 53) % 401 - 200));
    bs.push_back(std::to_string(sx * scale));
  }
  std::ostringstream text;
  text << R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,)" << c.channels << "," << c.side << "," << c.side << R"(] x) => (float[1,)" << outputs << "," << out_side << "," << out_side
       << R"(] y) {
      sx = Constant <value = float {)" << sx << R"(}> ()
      zx = Constant <value = )" << c.src_type << " {" << c.src_zero << R"(}> ()
      wq = Constant <value = int8[)" << outputs << "," << per_group << "," << k << "," << k << "] {" << List(w) << R"(}> ()
      ws = Constant <value = float[)" << outputs << "] {" << List(ws) << R"(}> ()
      wz = Constant <value = int8[)" << outputs << "] {" << List(wz) << R"(}> ()
      bq = Constant <value = int32[)" << outputs << "] {" << List(b) << R"(}> ()
      bs = Constant <value = float[)" << outputs << "] {" << List(bs) << R"(}> ()
      sy = Constant <value = float {0.03}> ()
      zy = Constant <value = )" << c.dst_type << " {" << c.dst_zero << R"(}> ()
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {6.0}> ()
      xq = QuantizeLinear (x, sx, zx)
      xd = DequantizeLinear (xq, sx, zx)
      wd = DequantizeLinear <axis = 0> (wq, ws, wz)
      bd = DequantizeLinear <axis = 0> (bq, bs)
      c = Conv <group = )" << c.group << ", strides = [" << c.stride << "," << c.stride
       << "], pads = [" << c.pad << "," << c.pad << "," << c.pad << "," << c.pad << R"(]> (xd, wd, bd)
)";
  std::string last = "c";
  if (c.activation == "Relu") text << "      a = Relu (c)\n", last = "a";
  if (c.activation == "Clip") text << "      a = Clip (c, lo, hi)\n", last = "a";
  if (c.activation == "Mul") text << "      half = Constant <value = float {0.5}> ()\n      a = Mul (c, half)\n", last = "a";
  if (c.activation == "Clip Clip")
    text << "      three = Constant <value = float {3.0}> ()\n      a1 = Clip (c, lo, hi)\n      a = Clip (a1, lo, three)\n",
        last = "a";
  if (c.requantize)
    text << "      yq = QuantizeLinear (" << last << ", sy, zy)\n      y = DequantizeLinear (yq, sy, zy)\n";
  else
    text << "      y = Identity (" << last << ")\n";
  text << "    }";
  return text.str();
}

// Fused against unfused: within one step of y's scale (0.03) everywhere,
// equal on at least `equal_share` of the elements; float outputs within 1e-5.
void CheckCase(const Case& c, bool want_int8, double equal_share = 0.97) {
  INFO(c.name);
  Graph graph = test::GraphFromText(ModelText(c));
  const Tensor x =
      test::TensorFrom({1, c.channels, c.side, c.side}, [](std::int64_t i) { return 4.0f * test::Wave(i * 7 + 3); });
  const test::PlanRun fused = test::RunPlan(graph, true, {x});
  const test::PlanRun unfused = test::RunPlan(graph, false, {x});
  INFO(test::StepList(fused));
  CHECK(std::count_if(fused.schedule.begin(), fused.schedule.end(), [](const ScheduleStep& s) {
          return s.kind == "conv" && (s.data_type == "u8" || s.data_type == "s8");
        }) == (want_int8 ? 1 : 0));
  CHECK(test::StepsStartingWith(fused, "host ") == 0);
  // A float convolution says why it is not int8 (run prints it, run --json gives it).
  const bool noted = std::any_of(fused.schedule.begin(), fused.schedule.end(), [](const ScheduleStep& s) {
    return s.kind == "conv" && s.note.rfind("float, not int8: ", 0) == 0;
  });
  CHECK(noted == !want_int8);
  const std::vector<float>& got = fused.outputs.at(0).data;
  const std::vector<float>& want = unfused.outputs.at(0).data;
  if (c.requantize) {
    test::RequireWithinOneStep(got, want, 0.03f, equal_share);
  } else {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i << ": fused " << got[i] << ", unfused " << want[i]);
      REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])));
    }
  }
}

}  // namespace

TEST_CASE("a QDQ convolution with 7-bit weights runs as one int8 convolution on every CPU", "[quantize][int8]") {
  std::vector<Case> cases;
  cases.push_back({"uint8 source with zero point 128 (the padding is the zero point), Relu, uint8 result"});
  Case strided{"stride 2, Clip 0..6, result zero point 5"};
  strided.stride = 2, strided.activation = "Clip", strided.dst_zero = 5;
  cases.push_back(strided);
  Case dw{"depthwise, no activation, int8 result with zero point 2"};
  dw.group = 16, dw.outputs = 16, dw.activation = "", dw.dst_type = "int8", dw.dst_zero = 2;
  cases.push_back(dw);
  Case grouped{"4 groups of 8 channels, Relu"};
  grouped.group = 4, grouped.channels = 32, grouped.outputs = 32;
  cases.push_back(grouped);
  Case to_float{"no QuantizeLinear after it: a float32 result"};
  to_float.requantize = false;
  cases.push_back(to_float);
  // A linear step, then the result's zero point (another linear step): one
  // post-op, as oneDNN's int8 kernels apply the first one's alpha and beta to both.
  Case scaled{"Mul by 0.5, result zero point 121"};
  scaled.activation = "Mul", scaled.dst_zero = 121;
  cases.push_back(scaled);
  Case scaled_1x1{"1x1, Mul by 0.5, result zero point 121"};
  scaled_1x1.activation = "Mul", scaled_1x1.dst_zero = 121, scaled_1x1.kernel = 1, scaled_1x1.pad = 0;
  cases.push_back(scaled_1x1);
  for (const Case& c : cases) CheckCase(c, true);
}

TEST_CASE("two post-ops of one algorithm after a QDQ convolution run on float kernels, and say why",
          "[quantize][int8]") {
  // oneDNN 2.6's AVX2 int8 kernels gave Clip then Clip 30 steps off.
  Case twice{"Clip 0..6 then Clip 0..3"};
  twice.activation = "Clip Clip";
  CheckCase(twice, false);
}

TEST_CASE("8-bit weights and int8 sources run int8 only where the CPU sums u8 x s8 products in 32 bits (VNNI)",
          "[quantize][int8]") {
  Case wide{"8-bit weights"};
  wide.weight_max = 127;
  Case s8{"int8 source with zero point -3"};
  s8.src_type = "int8", s8.src_zero = -3;
  for (const Case& c : {wide, s8}) CheckCase(c, onnxfuse::backend::HasInt8DotProduct());
}

TEST_CASE("random QDQ convolutions: int8 within one step of the ONNX definition", "[quantize][int8]") {
  // Shapes, strides, groups, kernel sizes, zero points and activations drawn
  // from a fixed seed: what the fixed cases above do not reach.
  std::mt19937 rng(2026);
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
  };
  for (int n = 0; n < 24; ++n) {
    Case c{"random case " + std::to_string(n)};
    c.kernel = pick({1, 3, 5});
    c.pad = pick({0, c.kernel / 2});
    c.stride = pick({1, 2});
    c.side = pick({5, 8, 13});
    const int kind = pick({0, 0, 1, 2});  // plain, depthwise, grouped
    c.group = kind == 1 ? pick({8, 16, 24}) : kind == 2 ? pick({2, 4}) : 1;
    // (oneDNN 2.6 has only its reference int8 kernel for groups of 3 channels: float then)
    c.channels = kind == 1 ? c.group : c.group * (kind == 2 ? pick({8, 16, 20}) : pick({3, 8, 16, 20}));
    c.outputs = kind == 1 ? c.group : c.group * pick({4, 8, 12});
    c.src_zero = pick({0, 7, 128, 250});
    c.activation = pick({0, 1, 2}) == 0 ? "" : pick({0, 1}) ? "Relu" : "Clip";
    c.requantize = pick({0, 1, 1, 1}) == 1;
    c.dst_type = pick({0, 1}) ? "uint8" : "int8";
    c.dst_zero = c.dst_type == "uint8" ? pick({0, 3, 128}) : pick({0, -4, 20});
    c.name += ": k " + std::to_string(c.kernel) + " pad " + std::to_string(c.pad) + " stride " +
              std::to_string(c.stride) + " side " + std::to_string(c.side) + " group " + std::to_string(c.group) +
              " channels " + std::to_string(c.channels) + " -> " + std::to_string(c.outputs) + " zero " +
              std::to_string(c.src_zero) + " " + c.activation + (c.requantize ? " -> " + c.dst_type : " -> float");
    CheckCase(c, true, 0.9);
  }
}
