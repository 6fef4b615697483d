// A small reference interpreter in double precision over NCHW tensors, for
// the ops the BatchNormalization folding tests meet: Constant, Conv,
// ConvTranspose (ONNX Operators.md), inference BatchNormalization
// (y = (x - mean) / sqrt(var + epsilon) * scale + B), Identity, Relu and
// same-shape Add. Another op fails the calling test (Catch2 FAIL).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse::test {

struct Tensor {
  std::vector<std::int64_t> dims;
  std::vector<double> data;
  double& at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return data[static_cast<std::size_t>(((n * dims[1] + c) * dims[2] + h) * dims[3] + w)];
  }
};

/// Runs `model` on `env` (graph inputs by name, 4-D); returns every graph output by name.
std::map<std::string, Tensor> Run(const onnx::ModelProto& model, std::map<std::string, Tensor> env);

/// compare.js's measure: max|a - b| / max|a| over each output of the two
/// models run on the same uniform [-1, 1) inputs (seed 42; symbolic dims as 1), the worst output.
double MaxRelativeDifference(const onnx::ModelProto& reference, const onnx::ModelProto& candidate);

}  // namespace onnxfuse::test
