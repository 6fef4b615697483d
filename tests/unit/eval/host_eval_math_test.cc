// Elementwise math on the host evaluator (src/eval/host_eval_math.cc):
// ONNX's node tests of each op, then integer semantics the spec settles (Mod's
// sign, BitShift's width, division by zero) and activations' attributes.
#include <catch2/catch.hpp>

#include <cmath>

#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using test::FloatAttr;
using test::IntAttr;
using test::NodeOf;
using test::StringAttr;

TEST_CASE("Mod, BitShift, Xor, IsNaN, IsInf, Sum, Mean, Min, Max and Clip reproduce ONNX's node tests",
          "[host_eval]") {
  test::CheckNodeTestsOnHost("mod", 13);
  test::CheckNodeTestsOnHost("bitshift", 8);
  test::CheckNodeTestsOnHost("xor", 8);
  test::CheckNodeTestsOnHost("isnan", 1);
  test::CheckNodeTestsOnHost("isinf", 3);
  test::CheckNodeTestsOnHost("sum", 3);
  test::CheckNodeTestsOnHost("mean", 3);
  test::CheckNodeTestsOnHost("min", 14);
  test::CheckNodeTestsOnHost("max", 14);
  test::CheckNodeTestsOnHost("clip", 11);
}

TEST_CASE("activations and unary functions reproduce ONNX's node tests", "[host_eval]") {
  for (const auto& [name, count] : std::vector<std::pair<std::string, std::size_t>>{
           {"softplus", 2},  {"softsign", 2}, {"hardsigmoid", 3}, {"hardswish", 1},     {"elu", 3},
           {"selu", 3},      {"leakyrelu", 3}, {"thresholdedrelu", 3}, {"celu", 1},     {"sigmoid", 2},
           {"tanh", 2},      {"erf", 1},       {"sin", 2},        {"cos", 2},           {"tan", 2},
           {"asin", 2},      {"acos", 2},      {"atan", 2},       {"sinh", 2},          {"cosh", 2},
           {"asinh", 2},     {"acosh", 2},     {"atanh", 2},      {"neg", 2},           {"abs", 1},
           {"ceil", 2},      {"floor", 2},     {"round", 1},      {"exp", 2},           {"log", 2},
           {"reciprocal", 2}, {"relu", 1},     {"sign", 1},       {"sqrt", 2},          {"not", 3}})
    test::CheckNodeTestsOnHost(name, count);
}

TEST_CASE("integer Mod takes the divisor's sign (fmod 0) or the dividend's (fmod 1), and by zero is refused",
          "[host_eval]") {
  const Tensor a = test::IntTensorOf("", {4}, {-7, 7, -7, 7});
  const Tensor b = test::IntTensorOf("", {4}, {3, -3, -3, 3});
  CHECK(eval::EvalOnHost(NodeOf("Mod"), {&a, &b}, 13).at(0).int_data == std::vector<std::int64_t>{2, -2, -1, 1});
  CHECK(eval::EvalOnHost(NodeOf("Mod", {IntAttr("fmod", 1)}), {&a, &b}, 13).at(0).int_data ==
        std::vector<std::int64_t>{-1, 1, -1, 1});
  const Tensor zero = test::IntTensorOf("", {}, {0});
  for (const char* op : {"Mod", "Div"}) {
    const auto e = test::ErrorOf([&] { eval::EvalOnHost(NodeOf(op), {&a, &zero}, 13); });
    CHECK(e.kind == ErrorKind::kInvalidModel);
    CHECK_THAT(e.message, Catch::Contains("by zero"));
  }
  const Tensor f = test::TensorOf("", {1}, {-7.5f});
  CHECK(test::ErrorOf([&] { eval::EvalOnHost(NodeOf("Mod"), {&f, &f}, 13); }).kind == ErrorKind::kInvalidModel);
}

TEST_CASE("integer results come out wide and narrow to their type: a uint8 left shift, an int8 Add, a uint8 Sub",
          "[host_eval]") {
  auto narrowed = [](Tensor t, std::int32_t type) {
    eval::NarrowTo(t, type);
    return t.int_data;
  };
  const Tensor x = test::IntTensorOf("", {2}, {200, 3});
  const Tensor s = test::IntTensorOf("", {2}, {1, 7});
  const auto left = NodeOf("BitShift", {StringAttr("direction", "LEFT")});
  const Tensor shifted = eval::EvalOnHost(left, {&x, &s}, 11).at(0);
  CHECK(shifted.int_data == std::vector<std::int64_t>{400, 384});
  CHECK(narrowed(shifted, onnx::TensorProto::UINT8) == std::vector<std::int64_t>{144, 128});
  const Tensor y = test::IntTensorOf("", {2}, {100, 4});
  CHECK(narrowed(eval::EvalOnHost(NodeOf("Add"), {&x, &y}, 13).at(0), onnx::TensorProto::INT8) ==
        std::vector<std::int64_t>{44, 7});
  CHECK(narrowed(eval::EvalOnHost(NodeOf("Sub"), {&s, &y}, 13).at(0), onnx::TensorProto::UINT8) ==
        std::vector<std::int64_t>{157, 3});
  // Integer Div truncates toward zero; int64 stays exact past 2^53.
  const Tensor n = test::IntTensorOf("", {2}, {-7, (std::int64_t{1} << 60) + 1});
  const Tensor d = test::IntTensorOf("", {2}, {2, 1});
  CHECK(eval::EvalOnHost(NodeOf("Div"), {&n, &d}, 13).at(0).int_data ==
        std::vector<std::int64_t>{-3, (std::int64_t{1} << 60) + 1});
}

TEST_CASE("comparisons, And, Or, Xor, Not, IsNaN and IsInf give 0/1 int64, and IsInf detects by sign", "[host_eval]") {
  const Tensor x = test::TensorOf("", {4}, {INFINITY, -INFINITY, NAN, 1});
  auto out = eval::EvalOnHost(NodeOf("IsInf", {IntAttr("detect_positive", 0)}), {&x}, 10);
  CHECK(out.at(0).elem_type == onnx::TensorProto::INT64);
  CHECK(out.at(0).int_data == std::vector<std::int64_t>{0, 1, 0, 0});
  CHECK(eval::EvalOnHost(NodeOf("IsNaN"), {&x}, 13).at(0).int_data == std::vector<std::int64_t>{0, 0, 1, 0});
  const Tensor big = test::IntTensorOf("", {1}, {(std::int64_t{1} << 60) + 1});
  const Tensor big2 = test::IntTensorOf("", {1}, {std::int64_t{1} << 60});
  CHECK(eval::EvalOnHost(NodeOf("Greater"), {&big, &big2}, 13).at(0).int_data == std::vector<std::int64_t>{1});
  CHECK(eval::EvalOnHost(NodeOf("Equal"), {&big, &big2}, 13).at(0).int_data == std::vector<std::int64_t>{0});
}

TEST_CASE("activation attributes: Elu, LeakyRelu, HardSigmoid, Celu against their formulas", "[host_eval]") {
  const Tensor x = test::TensorOf("", {3}, {-2, 0.5f, 3});
  auto near = [](const Tensor& t, std::vector<double> want) {
    REQUIRE(t.data.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(t.data[i] == Approx(want[i]).epsilon(1e-6));
  };
  near(eval::EvalOnHost(NodeOf("Elu", {FloatAttr("alpha", 0.5f)}), {&x}, 6).at(0),
       {0.5 * (std::exp(-2.0) - 1), 0.5, 3});
  near(eval::EvalOnHost(NodeOf("LeakyRelu", {FloatAttr("alpha", 0.1f)}), {&x}, 6).at(0), {-0.2, 0.5, 3});
  near(eval::EvalOnHost(NodeOf("HardSigmoid", {FloatAttr("alpha", 0.25f)}), {&x}, 6).at(0), {0, 0.625, 1});
  near(eval::EvalOnHost(NodeOf("Celu", {FloatAttr("alpha", 2.0f)}), {&x}, 12).at(0),
       {2 * (std::exp(-1.0) - 1), 0.5, 3});
}
