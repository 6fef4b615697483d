#include <catch2/catch.hpp>

#include <cstring>

#include "ir/tensor_values.h"
#include "onnxfuse/error.h"

using namespace onnxfuse;

namespace {

onnx::TensorProto Tensor(std::int32_t type, std::vector<std::int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(type);
  for (auto d : dims) t.add_dims(d);
  return t;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace

TEST_CASE("DecodeTensor reads raw_data and the typed fields, converting each element", "[tensor_values]") {
  auto f = Tensor(onnx::TensorProto::FLOAT, {2});
  f.set_raw_data(Bytes<float>({1.5f, -2.25f}));
  CHECK(DecodeTensor<double>(f, "f") == std::vector<double>{1.5, -2.25});

  auto d = Tensor(onnx::TensorProto::DOUBLE, {3});
  for (double v : {0.1, 1e300, -3.0}) d.add_double_data(v);
  CHECK(DecodeTensor<double>(d, "d") == std::vector<double>{0.1, 1e300, -3.0});  // no float rounding
  CHECK(DecodeTensor<float>(d, "d")[0] == 0.1f);

  auto h = Tensor(onnx::TensorProto::FLOAT16, {3});
  h.set_raw_data(Bytes<std::uint16_t>({0x3c00, 0xc000, 0x0001}));  // 1, -2, the smallest subnormal 2^-24
  CHECK(DecodeTensor<float>(h, "h") == std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-8f});

  auto i8 = Tensor(onnx::TensorProto::INT8, {2});
  i8.set_raw_data(Bytes<std::int8_t>({-5, 7}));
  CHECK(DecodeTensor<std::int64_t>(i8, "i8") == std::vector<std::int64_t>{-5, 7});

  auto i32 = Tensor(onnx::TensorProto::INT32, {2, 1});
  i32.add_int32_data(-1);
  i32.add_int32_data(40000);
  CHECK(DecodeTensor<std::int64_t>(i32, "i32") == std::vector<std::int64_t>{-1, 40000});
}

TEST_CASE("DecodeTensor refuses data that does not match the dims, and unknown types", "[tensor_values]") {
  auto short_raw = Tensor(onnx::TensorProto::FLOAT, {3});
  short_raw.set_raw_data(Bytes<float>({1.0f, 2.0f}));
  auto kind = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  CHECK(kind([&] { DecodeTensor<float>(short_raw, "w"); }) == ErrorKind::kInvalidModel);
  CHECK_THROWS_WITH(DecodeTensor<float>(short_raw, "w"), "w: raw_data has 8 bytes, dims need 12");

  auto few = Tensor(onnx::TensorProto::INT64, {2});
  few.add_int64_data(1);
  CHECK_THROWS_WITH(DecodeTensor<std::int64_t>(few, "s"), "s: holds 1 values, dims need 2");

  auto strings = Tensor(onnx::TensorProto::STRING, {1});
  strings.add_string_data("a");
  CHECK(kind([&] { DecodeTensor<double>(strings, "s"); }) == ErrorKind::kUnsupported);

  auto negative = Tensor(onnx::TensorProto::FLOAT, {-1});
  CHECK(kind([&] { DecodeTensor<float>(negative, "n"); }) == ErrorKind::kInvalidModel);
}

TEST_CASE("EncodeTensor writes raw_data that DecodeTensor reads back", "[tensor_values]") {
  const std::vector<double> values = {0.1, -1e10, 3.0, 0.0};
  auto d = EncodeTensor("d", onnx::TensorProto::DOUBLE, {2, 2}, values);
  CHECK(d.name() == "d");
  CHECK(d.raw_data().size() == 32);
  CHECK(DecodeTensor<double>(d, "d") == values);
  auto f = EncodeTensor("f", onnx::TensorProto::FLOAT, {4}, values);
  CHECK(f.raw_data().size() == 16);
  CHECK(DecodeTensor<double>(f, "f") == std::vector<double>{static_cast<float>(0.1), -1e10f, 3.0, 0.0});
}
