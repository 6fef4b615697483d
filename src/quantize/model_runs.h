// Runs an in-memory model on the calibration samples, as `onnx-fuse run`
// would run it from a file: through the front door
// (pipeline/prepare_model.h, PrepareGraph with session::ExecutionOptions),
// compiled once per input shape.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/tensor_io.h"

namespace onnxfuse::quantize {

/// One calibration sample: a tensor per graph input (MatchInputs orders them).
using Sample = std::vector<Tensor>;

class ModelRuns {
 public:
  /// `source_name` names the model in messages. `fuse` false: the unfused
  /// plan (one primitive per node: every value a probe asks for is made).
  ModelRuns(onnx::ModelProto model, std::string source_name, bool fuse);
  ~ModelRuns();

  /// The model's outputs for `sample`, by output name. Compiles the model at
  /// the sample's input shapes the first time they are seen. Throws what
  /// LoadModelProto and PrepareGraph throw; Error(kUsage) from MatchInputs
  /// for a sample that does not fit the inputs; Error(kUnsupported) for a
  /// model whose shapes follow values (it runs in stages: not here).
  std::map<std::string, Tensor> Run(const Sample& sample);

 private:
  struct Compiled;
  onnx::ModelProto model_;
  std::string source_name_;
  bool fuse_;
  std::map<std::vector<std::vector<std::int64_t>>, std::unique_ptr<Compiled>> compiled_;
};

/// The samples of a calibration folder: DIR/input_N.pb is one sample;
/// otherwise each sub-folder of DIR holding input_0.pb (the ONNX test-data
/// layout, test_data_set_K/input_N.pb) is one, in name order. Throws
/// Error(kIo) naming DIR when it holds no sample.
std::vector<Sample> ReadSamples(const std::string& dir);

}  // namespace onnxfuse::quantize
