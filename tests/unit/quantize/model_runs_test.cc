// Running an in-memory model on calibration samples, and reading them
// (src/quantize/model_runs.h).
#include <catch2/catch.hpp>

#include <filesystem>

#include "ir/tensor_io.h"
#include "load/loader.h"
#include "quantize/model_runs.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
using namespace onnxfuse::quantize;

TEST_CASE("ModelRuns runs a model with symbolic dims at each sample's shapes", "[quantize][executor]") {
  const onnx::ModelProto model = LoadModelProto(test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N] x) => (float[N] y) {
      y = Relu (x)
    })"), "runs.onnx").model();
  for (bool fuse : {false, true}) {
    ModelRuns runs(model, "runs.onnx", fuse);
    CHECK(runs.Run({test::TensorOf("x", {2}, {-1.0f, 2.0f})}).at("y").data == std::vector<float>{0.0f, 2.0f});
    CHECK(runs.Run({test::TensorOf("x", {3}, {4.0f, -1.0f, 0.5f})}).at("y").data == std::vector<float>{4.0f, 0.0f, 0.5f});
  }
}

TEST_CASE("ReadSamples reads one sample folder, or one sample per sub-folder in name order", "[quantize]") {
  test::TempDir dir("read_samples");
  WriteTensorDir((dir.path / "one").string(), {test::TensorOf("x", {1}, {1.0f})}, "input");
  CHECK(ReadSamples((dir.path / "one").string()).size() == 1);
  WriteTensorDir((dir.path / "many" / "set_1").string(), {test::TensorOf("x", {1}, {2.0f})}, "input");
  WriteTensorDir((dir.path / "many" / "set_0").string(), {test::TensorOf("x", {1}, {1.0f})}, "input");
  std::filesystem::create_directories(dir.path / "many" / "notes");  // no input_0.pb: not a sample
  const std::vector<Sample> samples = ReadSamples((dir.path / "many").string());
  REQUIRE(samples.size() == 2);
  CHECK(samples[0][0].data[0] == 1.0f);
  CHECK(samples[1][0].data[0] == 2.0f);
  std::filesystem::create_directories(dir.path / "empty");
  CHECK(test::ErrorOf([&] { ReadSamples((dir.path / "empty").string()); }).kind == ErrorKind::kIo);
  CHECK(test::ErrorOf([&] { ReadSamples((dir.path / "missing").string()); }).kind == ErrorKind::kIo);
}
