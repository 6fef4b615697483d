// Fuse (include/onnxfuse/fuse.h): the public fuse call writes the fused ONNX
// model or plan file the CLI writes, returns the report, never touches its
// input, and raises the CLI's errors.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "onnxfuse/error.h"
#include "onnxfuse/fuse.h"
#include "onnxfuse/session.h"
#include "session_cases.h"
#include "temp_dir.h"

using namespace onnxfuse;

namespace {

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("Fuse writes the fused model and a plan file, returning the report", "[fuse_api]") {
  test::TempDir dir("fuse_api");
  const std::string model = test::WriteModel(dir, test::SmallCnnModel());
  const std::string before = Bytes(model);

  FuseOptions options;
  options.output_path = (dir.path / "fused.onnx").string();
  options.report_path = (dir.path / "report.json").string();
  const FuseResult fused = Fuse(model, options);
  CHECK(fused.output_path == options.output_path);
  const nlohmann::json report = nlohmann::json::parse(fused.report_json);
  CHECK(report.at("groups").size() > 0);
  CHECK(nlohmann::json::parse(Bytes(options.report_path)) == report);
  CHECK(Bytes(model) == before);

  // The fused model and the plan file give the original's outputs.
  options.report_path.clear();
  options.output_path = (dir.path / "model.plan").string();
  options.input_shapes = {{"x", {2, 3, 8, 8}}};
  REQUIRE(Fuse(model, options).output_path == options.output_path);
  std::vector<float> x(2 * 3 * 8 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  const NamedInputs inputs = {{"x", TensorView{ElementType::kFloat, {2, 3, 8, 8}, x.data()}}};
  const std::vector<Tensor> want = InferenceSession(model).Run(inputs);
  for (const std::string& path : {(dir.path / "fused.onnx").string(), options.output_path}) {
    INFO(path);
    const std::vector<Tensor> got = InferenceSession(path).Run(inputs);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want[0].data.size(); ++i) CHECK(got[0].data[i] == Approx(want[0].data[i]).margin(1e-5));
  }
}

TEST_CASE("Fuse raises the CLI's errors and never overwrites its input", "[fuse_api]") {
  test::TempDir dir("fuse_api_errors");
  const std::string model = test::WriteModel(dir, test::SmallCnnModel());
  const std::string before = Bytes(model);
  FuseOptions options;
  options.output_path = model;
  try {
    Fuse(model, options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUsage);
  }
  CHECK(Bytes(model) == before);
  options.output_path = (dir.path / "out.onnx").string();
  try {
    Fuse((dir.path / "missing.onnx").string(), options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kIo);
  }
  CHECK_FALSE(std::filesystem::exists(options.output_path));
}
