// Host tensors and their files (ir/tensor_io.h): decoding every
// accepted TensorProto spelling, the refusals, input matching, the random
// inputs shared with scripts/ort/compare.js, and tensor comparison.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "onnxfuse/error.h"
#include "ir/tensor_io.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

Tensor Wavy(std::vector<std::int64_t> dims, std::string name) { return test::TensorFrom(std::move(dims), test::Wave, std::move(name)); }

template <typename T>
onnx::TensorProto Raw(onnx::TensorProto::DataType type, std::vector<std::int64_t> dims, const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_data_type(type);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

using test::IntTensorOf;

}  // namespace

TEST_CASE("tensor files round-trip float and int64, and inputs match by name or position", "[tensor_io]") {
  auto dir = std::filesystem::temp_directory_path() / "onnxfuse_tensor_io_test";
  std::filesystem::remove_all(dir);
  Tensor f = Wavy({2, 3}, "a");
  Tensor i;
  i.name = "b", i.elem_type = onnx::TensorProto::INT64, i.dims = {3}, i.int_data = {1, -2, 1LL << 40};
  WriteTensorDir(dir.string(), {f, i}, "input");
  auto back = ReadTensorDir(dir.string(), "input");
  REQUIRE(back.size() == 2);
  CHECK(back[0].data == f.data);
  CHECK(back[0].dims == f.dims);
  CHECK(back[1].int_data == i.int_data);

  onnx::TensorProto typed;  // float_data instead of raw_data
  typed.set_data_type(onnx::TensorProto::FLOAT);
  typed.add_dims(2);
  typed.add_float_data(1.5f), typed.add_float_data(-2.f);
  CHECK(TensorFromProto(typed, "t").data == std::vector<float>{1.5f, -2.f});
  typed.add_float_data(3.f);
  CHECK_THROWS_AS(TensorFromProto(typed, "t"), Error);

  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2] p, float[1,3] q) => (float[1,5] y) { y = Concat <axis = 1> (p, q) })");
  Tensor p = Wavy({1, 2}, "p"), q = Wavy({1, 3}, "q");
  CHECK(MatchInputs(graph, {q, p})[0].dims == p.dims);  // by name
  p.name = "first", q.name = "second";
  CHECK(MatchInputs(graph, {p, q})[1].name == "q");  // by position
  CHECK_THROWS_AS(MatchInputs(graph, {q, p}), Error);  // by position, wrong shapes

  auto random = RandomInputs(graph);  // compare.js's mulberry32, seed = input index + 1
  CHECK(random[0].data[0] == Approx(0.2541478811763227));
  CHECK(random[0].data[1] == Approx(-0.994528557639569));
  std::filesystem::remove_all(dir);
}

TEST_CASE("every accepted element type decodes, float-like to float and integers to int64", "[tensor_io]") {
  SECTION("float16: normal, subnormal, infinity, negative zero") {
    // 0x3c00 = 1, 0xc000 = -2, 0x0001 = 2^-24 (the smallest subnormal), 0x7c00 = +inf, 0x8000 = -0.
    auto t = TensorFromProto(Raw<std::uint16_t>(onnx::TensorProto::FLOAT16, {5}, {0x3c00, 0xc000, 0x0001, 0x7c00, 0x8000}), "h");
    REQUIRE(t.elem_type == onnx::TensorProto::FLOAT);
    CHECK(t.data[0] == 1.0f);
    CHECK(t.data[1] == -2.0f);
    CHECK(t.data[2] == std::ldexp(1.0f, -24));
    CHECK(std::isinf(t.data[3]));
    CHECK(t.data[4] == 0.0f);
    CHECK(std::signbit(t.data[4]));
  }
  SECTION("double, in raw_data and in double_data") {
    auto raw = TensorFromProto(Raw<double>(onnx::TensorProto::DOUBLE, {2}, {0.5, -1.25}), "d");
    CHECK(raw.data == std::vector<float>{0.5f, -1.25f});
    onnx::TensorProto typed;
    typed.set_data_type(onnx::TensorProto::DOUBLE);
    typed.add_dims(1);
    typed.add_double_data(3.5);
    CHECK(TensorFromProto(typed, "d").data == std::vector<float>{3.5f});
  }
  SECTION("int32, int8, uint8 and bool become int64") {
    auto i32 = TensorFromProto(Raw<std::int32_t>(onnx::TensorProto::INT32, {2}, {-7, 1 << 30}), "i");
    CHECK(i32.elem_type == onnx::TensorProto::INT64);
    CHECK(i32.int_data == std::vector<std::int64_t>{-7, 1 << 30});
    CHECK(TensorFromProto(Raw<std::int8_t>(onnx::TensorProto::INT8, {2}, {-128, 5}), "i").int_data ==
          std::vector<std::int64_t>{-128, 5});
    CHECK(TensorFromProto(Raw<std::uint8_t>(onnx::TensorProto::UINT8, {2}, {255, 0}), "u").int_data ==
          std::vector<std::int64_t>{255, 0});
    CHECK(TensorFromProto(Raw<std::uint8_t>(onnx::TensorProto::BOOL, {2}, {1, 0}), "b").int_data ==
          std::vector<std::int64_t>{1, 0});
  }
  SECTION("a scalar has one element") {
    auto t = TensorFromProto(Raw<float>(onnx::TensorProto::FLOAT, {}, {4.0f}), "s");
    CHECK(t.dims.empty());
    CHECK(t.data == std::vector<float>{4.0f});
  }
}

TEST_CASE("tensors that cannot be decoded are refused with their source and reason", "[tensor_io]") {
  auto short_raw = Raw<float>(onnx::TensorProto::FLOAT, {2}, {1.0f});
  auto e = test::ErrorOf([&] { TensorFromProto(short_raw, "in.pb"); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK(e.message == "in.pb: raw_data has 4 bytes, dims need 8");

  auto negative = Raw<float>(onnx::TensorProto::FLOAT, {-1}, {});
  CHECK(test::ErrorOf([&] { TensorFromProto(negative, "n.pb"); }).kind == ErrorKind::kInvalidModel);

  onnx::TensorProto strings;
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.add_dims(1);
  strings.add_string_data("a");
  e = test::ErrorOf([&] { TensorFromProto(strings, "s.pb"); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::Contains("s.pb: tensor element type 8 is not supported"));

  auto external = Raw<float>(onnx::TensorProto::FLOAT, {1}, {1.0f});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  e = test::ErrorOf([&] { TensorFromProto(external, "x.pb"); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::Contains("stored externally"));

  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::INT64);
  typed.add_dims(3);
  typed.add_int64_data(1);
  e = test::ErrorOf([&] { TensorFromProto(typed, "t.pb"); });
  CHECK(e.message == "t.pb: holds 1 values, dims need 3");
}

TEST_CASE("tensor files: written as raw_data, missing and damaged files refused", "[tensor_io]") {
  const fs::path dir = fs::temp_directory_path() / ("onnxfuse_tensor_files_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  WriteTensorDir(dir.string(), {IntTensorOf("k", {2}, {3, -4})}, "output");
  onnx::TensorProto written;
  {
    std::ifstream in(dir / "output_0.pb", std::ios::binary);
    REQUIRE(written.ParseFromIstream(&in));
  }
  CHECK(written.data_type() == onnx::TensorProto::INT64);
  CHECK(written.raw_data().size() == 16);
  CHECK(written.int64_data_size() == 0);

  auto e = test::ErrorOf([&] { ReadTensorDir(dir.string(), "input"); });
  CHECK(e.kind == ErrorKind::kIo);
  CHECK(e.message == dir.string() + ": no input_0.pb");
  CHECK(test::ErrorOf([&] { ReadTensorFile((dir / "absent.pb").string()); }).kind == ErrorKind::kIo);
  { std::ofstream(dir / "junk.pb", std::ios::binary) << "\xff\xff\xff not a tensor"; }
  e = test::ErrorOf([&] { ReadTensorFile((dir / "junk.pb").string()); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("not a serialized TensorProto"));
  fs::remove_all(dir);
}

TEST_CASE("inputs are refused on count, element type and shape: symbolic dims take any size", "[tensor_io]") {
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,2] p, int64[2] k) => (float[N,2] y) { s = Cast <to = 1> (k)  y = Add (p, s) })");
  auto e = test::ErrorOf([&] { MatchInputs(graph, {Wavy({1, 2}, "p")}); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK(e.message == "the model has 2 inputs, got 1 tensors");
  e = test::ErrorOf([&] { MatchInputs(graph, {Wavy({1, 2}, "p"), Wavy({2}, "k")}); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK_THAT(e.message, Catch::Contains("input 'k'") && Catch::Contains("wrong element type"));
  e = test::ErrorOf([&] { MatchInputs(graph, {Wavy({1, 3}, "p"), IntTensorOf("k", {2}, {1, 2})}); });
  CHECK(e.message == "input 'p' is [N,2], tensor 'p' is [1,3] (pin symbolic dims with --input-shape)");
  auto matched = MatchInputs(graph, {Wavy({5, 2}, "p"), IntTensorOf("k", {2}, {1, 2})});
  CHECK(matched[0].dims == std::vector<std::int64_t>{5, 2});

  // Random inputs: symbolic dims become 1; integer inputs are floor(4u) of
  // mulberry32 seeded with the input's index + 1, as scripts/ort/compare.js
  // draws them (u = 0.67..., 0.43... for seed 2).
  auto random = RandomInputs(graph);
  CHECK(random[0].dims == std::vector<std::int64_t>{1, 2});
  CHECK(random[1].elem_type == onnx::TensorProto::INT64);
  CHECK(random[1].DataType() == onnx::TensorProto::INT64);
  CHECK(random[1].int_data == std::vector<std::int64_t>{2, 1});
}

TEST_CASE("CompareTensors: max absolute and relative difference, NaN, infinities and shape mismatches", "[tensor_io]") {
  auto a = test::TensorOf("a", {3}, {1.0f, -4.0f, 2.0f});
  auto b = test::TensorOf("b", {3}, {1.5f, -4.0f, 1.0f});
  auto diff = CompareTensors(a, b);
  CHECK(diff.max_abs == 1.0);
  CHECK(diff.max_rel == 0.25);  // 1 / max |a| = 1 / 4
  CHECK_FALSE(diff.shape_mismatch);

  auto zeros = test::TensorOf("z", {2}, {0.0f, 0.0f});
  CHECK(CompareTensors(zeros, zeros).max_rel == 0.0);
  CHECK(std::isinf(CompareTensors(zeros, test::TensorOf("o", {2}, {0.0f, 1e-3f})).max_rel));

  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(CompareTensors(test::TensorOf("n", {1}, {nan}), test::TensorOf("n", {1}, {nan})).max_abs == 0.0);
  CHECK(std::isinf(CompareTensors(test::TensorOf("n", {1}, {nan}), test::TensorOf("m", {1}, {1.0f})).max_abs));

  // An infinity is no part of the scale: the finite elements still compare.
  const float inf = std::numeric_limits<float>::infinity();
  auto with_inf = CompareTensors(test::TensorOf("i", {2}, {inf, 2.0f}), test::TensorOf("j", {2}, {inf, 1.0f}));
  CHECK(with_inf.max_abs == 1.0);
  CHECK(with_inf.max_rel == 0.5);
  CHECK(std::isinf(CompareTensors(test::TensorOf("i", {1}, {inf}), test::TensorOf("j", {1}, {-inf})).max_abs));
  CHECK(std::isinf(CompareTensors(test::TensorOf("i", {1}, {inf}), test::TensorOf("j", {1}, {3e38f})).max_rel));
  CHECK(std::isinf(CompareTensors(test::TensorOf("i", {1}, {1.0f}), test::TensorOf("j", {1}, {nan})).max_abs));

  auto reshaped = test::TensorOf("r", {1, 3}, {1.0f, -4.0f, 2.0f});
  CHECK(CompareTensors(a, reshaped).shape_mismatch);
  CHECK(CompareTensors(IntTensorOf("i", {1}, {2}), IntTensorOf("j", {1}, {5})).max_abs == 3.0);
}
