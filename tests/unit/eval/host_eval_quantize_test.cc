// The quantization ops on the host evaluator (src/eval/host_eval_quantize.cc):
// ONNX's node tests, then the cases they leave out: ties to even, saturation,
// per-axis and per-row parameters, grouped and padded integer convolution.
#include <catch2/catch.hpp>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

using test::NodeOf;

namespace {

Tensor Typed(Tensor t, std::int32_t data_type) {
  t.data_type = data_type;
  return t;
}

Tensor Uint8(std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
  return Typed(test::IntTensorOf("", std::move(dims), std::move(values)), onnx::TensorProto::UINT8);
}

Tensor Int8(std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
  return Typed(test::IntTensorOf("", std::move(dims), std::move(values)), onnx::TensorProto::INT8);
}

}  // namespace

TEST_CASE("The quantization ops reproduce ONNX's node tests", "[host_eval]") {
  test::CheckNodeTestsOnHost("quantizelinear", 2);
  test::CheckNodeTestsOnHost("dequantizelinear", 2);
  test::CheckNodeTestsOnHost("dynamicquantizelinear", 3);
  test::CheckNodeTestsOnHost("matmulinteger", 1);
  test::CheckNodeTestsOnHost("qlinearmatmul", 2);
  test::CheckNodeTestsOnHost("convinteger", 2);
  test::CheckNodeTestsOnHost("basic_convinteger", 1);
  test::CheckNodeTestsOnHost("qlinearconv", 1);
}

TEST_CASE("QuantizeLinear rounds ties to even before the zero point, and saturates", "[host_eval]") {
  const Tensor x = test::TensorOf("", {6}, {0.5f, 1.5f, 2.5f, -0.5f, 1000.f, -1000.f});
  const Tensor scale = test::TensorOf("", {}, {1.0f});
  auto y = eval::EvalOnHost(NodeOf("QuantizeLinear"), {&x, &scale, nullptr}, 13);
  CHECK(y.at(0).DataType() == onnx::TensorProto::UINT8);  // no zero point: uint8, 0
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{0, 2, 2, 0, 255, 0});
  // Zero point 1: round(0.5) + 1 = 1, not round(1.5) = 2.
  const Tensor zero = Int8({}, {1});
  y = eval::EvalOnHost(NodeOf("QuantizeLinear"), {&x, &scale, &zero}, 13);
  CHECK(y.at(0).DataType() == onnx::TensorProto::INT8);
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{1, 3, 3, 1, 127, -128});
}

TEST_CASE("Quantize and Dequantize take one scale and zero point per index of `axis`", "[host_eval]") {
  const Tensor x = test::TensorOf("", {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor scale = test::TensorOf("", {2}, {1.0f, 2.0f});
  const Tensor zero = Int8({2}, {0, -10});
  const auto axis0 = NodeOf("QuantizeLinear", {test::IntAttr("axis", 0)});
  const auto q = eval::EvalOnHost(axis0, {&x, &scale, &zero}, 13);
  CHECK(q.at(0).int_data == std::vector<std::int64_t>{1, 2, 3, -8, -8, -7});  // 4/2 = 2, 5/2 = 2.5 -> 2, 6/2 = 3
  const auto dq = eval::EvalOnHost(NodeOf("DequantizeLinear", {test::IntAttr("axis", 0)}), {&q.at(0), &scale, &zero}, 13);
  CHECK(dq.at(0).data == std::vector<float>{1, 2, 3, 4, 4, 6});
  const Tensor wrong = test::TensorOf("", {3}, {1, 1, 1});
  const auto e = test::ErrorOf([&] { eval::EvalOnHost(axis0, {&x, &wrong, nullptr}, 13); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("3 values for axis 0"));
  // Opset 10 has no axis: a 1-D scale of several values is refused.
  const auto e10 = test::ErrorOf([&] { eval::EvalOnHost(axis0, {&x, &scale, &zero}, 10); });
  CHECK(e10.kind == ErrorKind::kInvalidModel);
}

TEST_CASE("DynamicQuantizeLinear of zeros alone has scale 1 and zero point 0", "[host_eval]") {
  const Tensor x = test::TensorOf("", {3}, {0, 0, 0});
  const auto out = eval::EvalOnHost(NodeOf("DynamicQuantizeLinear"), {&x}, 13);
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{0, 0, 0});
  CHECK(out.at(1).data == std::vector<float>{1.0f});
  CHECK(out.at(2).int_data == std::vector<std::int64_t>{0});
}

TEST_CASE("MatMulInteger subtracts zero points per row of a and per column of b", "[host_eval]") {
  const Tensor a = Uint8({2, 2}, {10, 11, 20, 22});
  const Tensor b = Int8({2, 2}, {1, 2, 3, 4});
  const Tensor a_zero = Uint8({2}, {10, 20});  // rows become {0, 1} and {0, 2}
  const Tensor b_zero = Int8({2}, {1, 2});     // columns become {0, 2} and {0, 2}
  const auto y = eval::EvalOnHost(NodeOf("MatMulInteger"), {&a, &b, &a_zero, &b_zero}, 13);
  CHECK(y.at(0).DataType() == onnx::TensorProto::INT32);
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{2, 2, 4, 4});
}

TEST_CASE("QLinearMatMul requantizes with per-column scales of b", "[host_eval]") {
  const Tensor a = Uint8({1, 2}, {3, 5});
  const Tensor a_scale = test::TensorOf("", {}, {0.5f});
  const Tensor a_zero = Uint8({}, {1});  // a - 1 = {2, 4}
  const Tensor b = Int8({2, 2}, {1, 1, 1, -1});
  const Tensor b_scale = test::TensorOf("", {2}, {1.0f, 2.0f});
  const Tensor b_zero = Int8({2}, {0, 0});
  const Tensor y_scale = test::TensorOf("", {}, {1.0f});
  const Tensor y_zero = Uint8({}, {128});
  // acc = {6, -2}; * {0.5, 1.0} = {3, -2}; + 128.
  const auto y = eval::EvalOnHost(NodeOf("QLinearMatMul"),
                                  {&a, &a_scale, &a_zero, &b, &b_scale, &b_zero, &y_scale, &y_zero}, 13);
  CHECK(y.at(0).dims == std::vector<std::int64_t>{1, 2});
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{131, 126});
}

TEST_CASE("ConvInteger and QLinearConv: groups, strides, padding, per-channel weights", "[host_eval]") {
  // x [1, 2, 3, 3] (channel 1 = channel 0 + 10), two groups of one channel, 2x2 kernels, stride 2, pads 1.
  std::vector<std::int64_t> xs;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 9; ++i) xs.push_back(i + 10 * c);
  const Tensor x = Uint8({1, 2, 3, 3}, xs);
  const Tensor w = Int8({2, 1, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});  // w_zero {0, 1}: ones in both groups
  const Tensor w_zero = Int8({2}, {0, 1});
  const auto conv = NodeOf("ConvInteger", {test::IntAttr("group", 2), test::IntsAttr("strides", {2, 2}),
                                           test::IntsAttr("pads", {1, 1, 1, 1})});
  const auto y = eval::EvalOnHost(conv, {&x, &w, nullptr, &w_zero}, 13);
  CHECK(y.at(0).dims == std::vector<std::int64_t>{1, 2, 2, 2});
  // Windows of rows {-1, 0}, {1, 2} and columns likewise: sums {0, 1+2, 3+6, 4+5+7+8}.
  CHECK(y.at(0).int_data == std::vector<std::int64_t>{0, 3, 9, 24, 10, 23, 29, 64});

  const Tensor one = test::TensorOf("", {}, {1.0f});
  const Tensor x_zero = Uint8({}, {0});
  const Tensor w_scale = test::TensorOf("", {2}, {0.5f, 0.25f});
  const Tensor y_scale = test::TensorOf("", {}, {2.0f});
  const Tensor y_zero = Int8({}, {-100});
  const Tensor bias = Typed(test::IntTensorOf("", {2}, {1, -1}), onnx::TensorProto::INT32);
  auto q = NodeOf("QLinearConv", {test::IntAttr("group", 2), test::IntsAttr("strides", {2, 2}),
                                  test::IntsAttr("pads", {1, 1, 1, 1})});
  const auto qy = eval::EvalOnHost(q, {&x, &one, &x_zero, &w, &w_scale, &w_zero, &y_scale, &y_zero, &bias}, 13);
  // (acc + B) * w_scale / 2, rounded half to even, - 100.
  CHECK(qy.at(0).int_data == std::vector<std::int64_t>{-100, -99, -98, -94, -99, -97, -96, -92});
}
