// InferenceSession and `onnx-fuse run` prepare a model through the same front
// door (src/pipeline/prepare_model.h): what `run` accepts, the session accepts,
// with the same outputs. Two models `run` needs rewritten first: an If decided
// at build time, and a function op the backend has no lowering for
// (NegativeLogLikelihoodLoss, run as its ONNX function body).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "app/run_job.h"
#include "onnxfuse/session.h"
#include "ir/tensor_io.h"
#include "session_cases.h"
#include "temp_dir.h"

namespace onnxfuse {
namespace {

// y = Relu(x), chosen by an If whose condition is a constant.
const char* const kBuildTimeIf = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[2,3] x) => (float[2,3] y) {
    c = Constant <value = bool {1}> ()
    y = If (c) <then_branch = then_g () => (float[2,3] t) { t = Relu (x) },
                else_branch = else_g () => (float[2,3] e) { e = Neg (x) }>
  })";

// y[n] = -x[n, target[n]]: NegativeLogLikelihoodLoss without reduction, a
// function op of ONNX that the backend does not lower.
const char* const kFunctionOp = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[3,5] x) => (float[3] y) {
    target = Constant <value = int64[3] {4, 0, 2}> ()
    y = NegativeLogLikelihoodLoss <reduction = "none"> (x, target)
  })";

Tensor Input(const std::vector<std::int64_t>& dims) {
  Tensor t;
  t.name = "x";
  t.dims = dims;
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.data.push_back(std::sin(0.7f * static_cast<float>(i)) * 2.0f);
  return t;
}

// `onnx-fuse run MODEL --inputs DIR --outputs DIR` with the default strategy.
std::vector<Tensor> RunCli(const test::TempDir& dir, const std::string& model, const Tensor& x) {
  RunOptions options;
  options.model_path = model;
  options.inputs_dir = (dir.path / "inputs").string();
  options.outputs_dir = (dir.path / "outputs").string();
  options.iterations = 1;
  options.warmup = 0;
  WriteTensorDir(options.inputs_dir, {x}, "input");
  std::ostringstream ignored;
  REQUIRE(RunJob(options, ignored) == 0);
  return ReadTensorDir(options.outputs_dir, "output");
}

std::vector<float> SessionRun(const std::string& model, const Tensor& x) {
  InferenceSession session(model);
  const std::vector<Tensor> out = session.Run({{"x", {ElementType::kFloat, x.dims, x.data.data()}}});
  REQUIRE(out.size() == 1);
  return out[0].data;
}

TEST_CASE("session: an If decided at build time runs as run runs it", "[session][front_door]") {
  test::TempDir dir("session_front_door");
  const std::string model = test::WriteModel(dir, kBuildTimeIf);
  const Tensor x = Input({2, 3});
  const std::vector<Tensor> cli = RunCli(dir, model, x);
  const std::vector<float> out = SessionRun(model, x);
  REQUIRE(cli.size() == 1);
  CHECK(out == cli[0].data);
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == std::max(x.data[i], 0.0f));
}

TEST_CASE("session: a function op the backend does not lower runs as its body, as run runs it",
          "[session][front_door]") {
  test::TempDir dir("session_front_door");
  const std::string model = test::WriteModel(dir, kFunctionOp);
  const Tensor x = Input({3, 5});
  const std::vector<Tensor> cli = RunCli(dir, model, x);
  const std::vector<float> out = SessionRun(model, x);
  REQUIRE(cli.size() == 1);
  CHECK(out == cli[0].data);
  const std::int64_t target[3] = {4, 0, 2};
  REQUIRE(out.size() == 3);
  for (std::size_t n = 0; n < 3; ++n) CHECK(out[n] == -x.data[n * 5 + static_cast<std::size_t>(target[n])]);
}

TEST_CASE("session: a model without inputs and one with a scalar input run, as run runs them",
          "[session][front_door]") {
  test::TempDir dir("session_front_door");
  InferenceSession constant(test::WriteModel(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g () => (float[2] y) {
      y = Constant <value = float[2] {1.5, -2.0}> ()
    })", "constant.onnx"));
  std::vector<Tensor> out = constant.Run({});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<float>{1.5f, -2.0f});

  InferenceSession scalar(test::WriteModel(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float x) => (float y) {
      y = Relu (x)
    })", "scalar.onnx"));
  const float x = -3.0f;
  out = scalar.Run({{"x", {ElementType::kFloat, {}, &x}}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<float>{0.0f});
}

}  // namespace
}  // namespace onnxfuse
