// Models and inputs the InferenceSession tests share (tests/unit/session/):
// a two-input model with a symbolic batch and its reference in double, a
// model whose shapes follow values, a small CNN with a symbolic batch, and
// the exported models' test data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxfuse/session.h"
#include "ir/tensor_io.h"
#include "temp_dir.h"

namespace onnxfuse::test {

/// y = Relu((x + z) @ w + b) with a symbolic batch N: x, z float[N,4], y
/// float[N,3]; w and b are initializers (kBatchW, kBatchB).
extern const char* const kBatchModel;
extern const double kBatchW[4][3];
extern const double kBatchB[3];

/// y = Gather(x, NonZero(x > 0)) * 2 and idx = NonZero(x > 0), x float[N]: how
/// many elements y has follows x's elements (a model run in stages).
extern const char* const kNonZeroModel;

/// A small CNN with a symbolic batch N, x float[N,3,S,S] -> y float[N,5]
/// (S = `image_size`, even): Conv 3->8 3x3 pad 1 (+bias), Relu, Conv 8->8 1x1,
/// Add with the Relu, MaxPool 2x2 stride 2, GlobalAveragePool, Flatten, Gemm
/// 8->5 (transB). Every weight an initializer: each shape's schedule prepacks
/// them, and the session shares the packed ones between schedules and
/// instances. At S = 64 its steps are large enough for OpenMP teams.
std::string SmallCnnModel(int image_size = 8);

/// `text` (ONNX text syntax) written as `name` into `dir`; returns its path.
std::string WriteModel(const TempDir& dir, const std::string& text, const std::string& name = "model.onnx");

/// Batch `n` of kBatchModel's inputs: x[i] = Wave(i + salt), z[i] = Wave(3 i + salt) / 2.
struct BatchInputs {
  std::vector<float> x, z;
  std::int64_t n;
  BatchInputs(std::int64_t batch, int salt);
  NamedInputs Views() const;
  /// kBatchModel's y in double.
  std::vector<double> Reference() const;
};

/// Batch `n` of SmallCnnModel(image_size)'s input: x[i] = Wave(5 i + salt).
struct CnnInputs {
  std::vector<float> x;
  std::int64_t n, size;
  CnnInputs(std::int64_t batch, int salt, int image_size = 8);
  NamedInputs Views() const;
};

/// An exported model (ONNXFUSE_MODELS_DIR/<name>, scripts/export_models.py)
/// and its test_data_set_0 inputs; a missing model fails the test.
struct ModelCase {
  std::string dir;
  std::vector<Tensor> inputs;
};
ModelCase LoadCase(const std::string& name);

/// `inputs` as the session's inputs, in order, over their data.
NamedInputs ViewsOf(const std::vector<Tensor>& inputs, const InferenceSession& session);

}  // namespace onnxfuse::test
