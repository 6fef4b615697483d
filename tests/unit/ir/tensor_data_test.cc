#include <catch2/catch.hpp>

#include <limits>

#include "onnxfuse/error.h"
#include "ir/tensor_data.h"

using namespace onnxfuse;

namespace {

onnx::TensorProto Tensor(int type, std::vector<std::int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(type);
  for (auto d : dims) t.add_dims(d);
  return t;
}

std::string Refusal(const onnx::TensorProto& t) {
  try {
    ValidateTensorData(t, "initializer 'w'", "m.onnx");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sizes are computed with overflow checks", "[tensor_data]") {
  auto t = Tensor(onnx::TensorProto::FLOAT, {2, 3});
  CHECK(TensorDataBytes(t) == 24);
  CHECK(CheckedMultiply(std::numeric_limits<std::int64_t>::max(), 2) == std::nullopt);
  CHECK(CheckedMultiply(-1, 2) == std::nullopt);
  CHECK(TensorDataBytes(Tensor(onnx::TensorProto::FLOAT, {1LL << 40, 1LL << 40})) == std::nullopt);
  CHECK(TensorDataBytes(Tensor(onnx::TensorProto::FLOAT, {1LL << 62})) == std::nullopt);  // 2^64 bytes
  CHECK(TensorDataBytes(Tensor(onnx::TensorProto::STRING, {2})) == std::nullopt);
  CHECK(TensorDataBytes(Tensor(onnx::TensorProto::FLOAT, {0, 7})) == 0);
}

TEST_CASE("tensor data must agree with type and dims", "[tensor_data]") {
  SECTION("valid: raw_data, typed fields, empty") {
    auto raw = Tensor(onnx::TensorProto::FLOAT16, {3});
    raw.set_raw_data(std::string(6, '\0'));
    CHECK(Refusal(raw).empty());
    auto typed = Tensor(onnx::TensorProto::COMPLEX64, {2});
    for (float v : {1.f, 2.f, 3.f, 4.f}) typed.add_float_data(v);
    CHECK(Refusal(typed).empty());
    auto bools = Tensor(onnx::TensorProto::BOOL, {2});
    bools.add_int32_data(1);
    bools.add_int32_data(0);
    CHECK(Refusal(bools).empty());
    CHECK(Refusal(Tensor(onnx::TensorProto::FLOAT, {0, 4})).empty());
    auto strings = Tensor(onnx::TensorProto::STRING, {1});
    strings.add_string_data("a");
    CHECK(Refusal(strings).empty());
  }
  SECTION("raw_data too short, with the sizes in the message") {
    auto t = Tensor(onnx::TensorProto::FLOAT, {4});
    t.set_raw_data(std::string(12, '\0'));
    CHECK_THAT(Refusal(t), Catch::StartsWith("m.onnx: initializer 'w' (FLOAT, dims [4]) has 12 bytes of raw_data") &&
                               Catch::Contains("need 16 bytes"));
  }
  SECTION("a huge declared dim is refused before anything is allocated") {
    auto t = Tensor(onnx::TensorProto::FLOAT, {1LL << 40});
    t.set_raw_data(std::string(16, '\0'));
    CHECK_THAT(Refusal(t), Catch::Contains("need 4398046511104 bytes"));
    CHECK_THAT(Refusal(Tensor(onnx::TensorProto::FLOAT, {1LL << 40, 1LL << 40})),
               Catch::Contains("more elements than fit in 64 bits"));
    CHECK_THAT(Refusal(Tensor(onnx::TensorProto::FLOAT, {-1})), Catch::Contains("negative dim"));
  }
  SECTION("values in the wrong field, in two fields, or missing") {
    auto wrong = Tensor(onnx::TensorProto::FLOAT, {1});
    wrong.add_int64_data(1);
    CHECK_THAT(Refusal(wrong), Catch::Contains("holds int64_data") && Catch::Contains("float_data"));
    auto both = Tensor(onnx::TensorProto::FLOAT, {1});
    both.add_float_data(1.f);
    both.set_raw_data(std::string(4, '\0'));
    CHECK_THAT(Refusal(both), Catch::Contains("both raw_data and float_data"));
    CHECK_THAT(Refusal(Tensor(onnx::TensorProto::FLOAT, {2})), Catch::Contains("holds 0 values in float_data"));
    auto complex = Tensor(onnx::TensorProto::COMPLEX64, {2});
    complex.add_float_data(1.f);
    complex.add_float_data(2.f);
    CHECK_THAT(Refusal(complex), Catch::Contains("its dims need 4"));
  }
  SECTION("types: unknown, string raw_data, external left unread") {
    CHECK_THAT(Refusal(Tensor(0, {1})), Catch::Contains("no valid data type"));
    CHECK_THAT(Refusal(Tensor(99, {1})), Catch::Contains("type 99"));
    auto strings = Tensor(onnx::TensorProto::STRING, {1});
    strings.set_raw_data("abc");
    CHECK_THAT(Refusal(strings), Catch::Contains("cannot use"));
    auto external = Tensor(onnx::TensorProto::FLOAT, {1});
    external.set_data_location(onnx::TensorProto::EXTERNAL);
    CHECK_THAT(Refusal(external), Catch::Contains("external data"));
  }
}

TEST_CASE("every stored tensor is visited, subgraphs included", "[tensor_data]") {
  onnx::GraphProto graph;
  graph.add_initializer()->set_name("init");
  auto* node = graph.add_node();
  node->set_op_type("If");
  auto* then_branch = node->add_attribute();
  then_branch->set_name("then_branch");
  auto* body = then_branch->mutable_g();
  auto* constant = body->add_node();
  constant->set_op_type("Constant");
  constant->set_name("k");
  auto* value = constant->add_attribute();
  value->set_name("value");
  value->mutable_t()->set_name("kt");
  body->add_initializer()->set_name("inner");
  std::vector<std::string> seen;
  ForEachTensor(graph, [&](onnx::TensorProto&, const std::string& what) { seen.push_back(what); });
  CHECK(seen == std::vector<std::string>{"initializer 'init'", "initializer 'inner'", "attribute 'value' of node 'k' (Constant)"});
}
