#include "quantize/model_runs.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "backend/runtime/executor.h"
#include "load/loader.h"
#include "onnxfuse/error.h"
#include "pipeline/prepare_model.h"
#include "pipeline/shapes_follow_values.h"
#include "session/execution_options.h"

namespace onnxfuse::quantize {

struct ModelRuns::Compiled {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ExecutablePlan> plan;
};

ModelRuns::ModelRuns(onnx::ModelProto model, std::string source_name, bool fuse)
    : model_(std::move(model)), source_name_(std::move(source_name)), fuse_(fuse) {}

ModelRuns::~ModelRuns() = default;

std::map<std::string, Tensor> ModelRuns::Run(const Sample& sample) {
  std::vector<std::vector<std::int64_t>> signature;
  for (const Tensor& t : sample) signature.push_back(t.dims);
  std::unique_ptr<Compiled>& compiled = compiled_[signature];
  if (!compiled) {
    PrepareOptions prepare = session::ExecutionOptions(kDefaultStrategy);
    prepare.fuse = fuse_;
    // The inputs' shapes: by name, or by position as MatchInputs takes them.
    std::vector<std::string> names;
    for (const auto& input : model_.graph().input()) {
      const bool initializer = std::any_of(model_.graph().initializer().begin(), model_.graph().initializer().end(),
                                           [&](const onnx::TensorProto& t) { return t.name() == input.name(); });
      if (!initializer) names.push_back(input.name());
    }
    for (std::size_t i = 0; i < sample.size() && i < names.size(); ++i) {
      const bool named = std::find(names.begin(), names.end(), sample[i].name) != names.end();
      prepare.load.input_shapes[named ? sample[i].name : names[i]] = sample[i].dims;
    }
    PreparedModel prepared = PrepareGraph(LoadModelProto(model_, source_name_, prepare.load), prepare);
    if (ShapesFollowValues(*prepared.graph))
      throw Error(ErrorKind::kUnsupported, source_name_ + ": its shapes follow its values (it runs in stages); "
                                                          "quantize runs models with one schedule per input shape");
    auto made = std::make_unique<Compiled>();
    CompileOptions options(fuse_);
    made->plan = std::make_unique<ExecutablePlan>(ExecutablePlan::Compile(*prepared.graph, prepared.fusion, options));
    made->graph = std::move(prepared.graph);
    compiled = std::move(made);
  }
  std::map<std::string, Tensor> outputs;
  for (Tensor& t : compiled->plan->Run(MatchInputs(*compiled->graph, sample))) {
    std::string name = t.name;
    outputs.emplace(std::move(name), std::move(t));
  }
  return outputs;
}

std::vector<Sample> ReadSamples(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw Error(ErrorKind::kIo, dir + ": no such calibration folder");
  if (fs::exists(fs::path(dir) / "input_0.pb")) return {ReadTensorDir(dir, "input")};
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && fs::exists(entry.path() / "input_0.pb")) folders.push_back(entry.path().string());
  std::sort(folders.begin(), folders.end());
  if (folders.empty())
    throw Error(ErrorKind::kIo, dir + ": no calibration sample (input_0.pb, or sub-folders holding input_0.pb)");
  std::vector<Sample> samples;
  for (const auto& folder : folders) samples.push_back(ReadTensorDir(folder, "input"));
  return samples;
}

}  // namespace onnxfuse::quantize
