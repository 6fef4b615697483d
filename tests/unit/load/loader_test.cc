#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "onnxfuse/error.h"
#include "load/loader.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

const char* kConvRelu = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,8,8] x, float[4,3,3,3] w) => (float[N,4,8,8] y) {
    c = Conv <pads: ints = [1,1,1,1]> (x, w)
    y = Relu (c)
  })";

ErrorKind KindOf(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  FAIL("expected an onnxfuse::Error");
  return ErrorKind::kInternal;
}

}  // namespace

TEST_CASE("a valid model loads with inferred shapes and use-lists", "[loader]") {
  LoadOptions options;
  options.input_shapes["x"] = {2, 3, 8, 8};
  Graph graph = test::GraphFromText(kConvRelu, options);
  REQUIRE(graph.num_nodes() == 2);
  CHECK(graph.node(0).op_type == "Conv");
  CHECK(graph.node(0).name == "Conv_0");
  ValueId c = *graph.FindValue("c");
  CHECK(graph.value(c).producer == 0);
  CHECK(graph.value(c).consumers == std::vector<NodeId>{1});
  CHECK(graph.value(c).type.ShapeString() == "[2,4,8,8]");
  // The pinned symbol N reaches the declared output too.
  CHECK(graph.value(*graph.FindValue("y")).type.ShapeString() == "[2,4,8,8]");
  CHECK(graph.value(c).type.SizeInBytes() == 2 * 4 * 8 * 8 * 4);
  CHECK(graph.opset() == 13);
}

TEST_CASE("symbolic dims stay symbolic without --input-shape", "[loader]") {
  Graph graph = test::GraphFromText(kConvRelu);
  CHECK(graph.value(*graph.FindValue("c")).type.ShapeString() == "[N,4,8,8]");
  CHECK_FALSE(graph.value(*graph.FindValue("c")).type.NumElements());
}

TEST_CASE("nodes out of topological order are sorted", "[loader]") {
  Graph graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] z) {
      z = Relu (y)
      y = Neg (x)
    })");
  CHECK(graph.node(0).op_type == "Neg");
  CHECK(graph.node(1).op_type == "Relu");
}

TEST_CASE("structural errors name the file, the node and the reason", "[loader]") {
  std::string message;
  SECTION("a cycle") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) {
        a = Add (x, b)
        b = Relu (a)
        z = Neg (b)
      })");
    CHECK(KindOf([&] { LoadModelProto(model, "cyc.onnx"); }, &message) == ErrorKind::kInvalidModel);
    CHECK_THAT(message, Catch::Contains("cyc.onnx") && Catch::Contains("cycle") && Catch::Contains("Add_0") &&
                            Catch::Contains("Relu_1"));
  }
  SECTION("a value without producer") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) { z = Add (x, ghost) })");
    CHECK(KindOf([&] { LoadModelProto(model, "m.onnx"); }, &message) == ErrorKind::kInvalidModel);
    CHECK_THAT(message, Catch::Contains("Add_0") && Catch::Contains("'ghost'"));
  }
  SECTION("a value written twice") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) { z = Relu (x)  z = Neg (x) })");
    CHECK(KindOf([&] { LoadModelProto(model, "m.onnx"); }, &message) == ErrorKind::kInvalidModel);
    CHECK_THAT(message, Catch::Contains("Neg_1") && Catch::Contains("Relu_0") && Catch::Contains("'z'"));
  }
  SECTION("a graph input without a type") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) { z = Relu (x) })");
    model.mutable_graph()->mutable_input(0)->clear_type();
    CHECK(KindOf([&] { LoadModelProto(model, "m.onnx"); }, &message) == ErrorKind::kInvalidModel);
    CHECK_THAT(message, Catch::Contains("graph input 'x' has no type"));
  }
  SECTION("a node that does not match its schema") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) { z = Relu (x, x) })");
    CHECK(KindOf([&] { LoadModelProto(model, "m.onnx"); }, &message) == ErrorKind::kInvalidModel);
    CHECK_THAT(message, Catch::Contains("Relu_0"));
  }
  SECTION("an opset newer than libonnx knows") {
    auto model = test::ParseModel(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] z) { z = Relu (x) })");
    model.mutable_opset_import(0)->set_version(99);
    CHECK(KindOf([&] { LoadModelProto(model, "m.onnx"); }, &message) == ErrorKind::kUnsupported);
    CHECK_THAT(message, Catch::Contains("opset 99"));
  }
}

TEST_CASE("files that are not models are refused with the file name", "[loader]") {
  test::TempDir dir("loader");
  auto bytes = test::ParseModel(kConvRelu).SerializeAsString();
  std::string message;
  CHECK(KindOf([&] { LoadModel((dir.path / "missing.onnx").string()); }, &message) == ErrorKind::kIo);
  CHECK_THAT(message, Catch::Contains("missing.onnx"));
  auto text = dir.Write("notes.onnx", "this is not a protobuf at all, just text\n");
  CHECK(KindOf([&] { LoadModel(text); }, &message) == ErrorKind::kInvalidModel);
  CHECK_THAT(message, Catch::Contains("notes.onnx"));
  auto truncated = dir.Write("cut.onnx", bytes.substr(0, bytes.size() / 2));
  CHECK(KindOf([&] { LoadModel(truncated); }, &message) == ErrorKind::kInvalidModel);
  CHECK_THAT(message, Catch::Contains("cut.onnx"));
  auto whole = dir.Write("whole.onnx", bytes);
  CHECK(LoadModel(whole).num_nodes() == 2);
}

TEST_CASE("initializers in external data are read, paths outside the folder refused", "[loader]") {
  test::TempDir dir("loader");
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) { y = Add (x, b) })");
  auto* b = model.mutable_graph()->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(2);
  b->set_data_location(onnx::TensorProto::EXTERNAL);
  auto set_location = [&](const std::string& location) {
    b->clear_external_data();
    auto* entry = b->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
  };
  float values[2] = {1.5f, -2.0f};
  dir.Write("weights.bin", std::string(reinterpret_cast<const char*>(values), sizeof values));

  set_location("weights.bin");
  Graph graph = LoadModel(dir.Write("ext.onnx", model.SerializeAsString()));
  const auto* tensor = graph.ConstantTensor(*graph.FindValue("b"));
  REQUIRE(tensor != nullptr);
  REQUIRE(tensor->raw_data().size() == sizeof values);
  CHECK(tensor->data_location() == onnx::TensorProto::DEFAULT);

  std::string message;
  set_location("../escape.bin");
  CHECK(KindOf([&] { LoadModel(dir.Write("bad.onnx", model.SerializeAsString())); }, &message) ==
        ErrorKind::kInvalidModel);
  CHECK_THAT(message, Catch::Contains("outside the model's folder"));
  set_location("absent.bin");
  CHECK(KindOf([&] { LoadModel(dir.Write("gone.onnx", model.SerializeAsString())); }, &message) == ErrorKind::kIo);
  CHECK_THAT(message, Catch::Contains("absent.bin"));
}

TEST_CASE("input shapes parse from the command-line spelling", "[loader]") {
  CHECK(ParseShape("1x3x224x224") == std::vector<std::int64_t>{1, 3, 224, 224});
  CHECK(ParseShape("8,16") == std::vector<std::int64_t>{8, 16});
  CHECK(KindOf([] { ParseShape("1xNx3"); }) == ErrorKind::kUsage);
  CHECK(KindOf([] { ParseShape(""); }) == ErrorKind::kUsage);
  LoadOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {1, 3};
  CHECK(KindOf([&] { test::GraphFromText(kConvRelu, wrong_rank); }) == ErrorKind::kUsage);
  LoadOptions unknown;
  unknown.input_shapes["nope"] = {1};
  CHECK(KindOf([&] { test::GraphFromText(kConvRelu, unknown); }) == ErrorKind::kUsage);
}
