// End-to-end check of the oneDNN backend on an exported model:
//   onnxfuse_run_reference MODEL_DIR [--no-fuse] [--rtol 1e-4] [--strategy postdom] [--plan FILE]
// Compiles MODEL_DIR/model.onnx (or loads the executable plan FILE), runs it on test_data_set_0/input_N.pb and
// compares every output with test_data_set_0/output_N.pb (max |a-b| / max|ref|,
// as scripts/ort/compare.js). Exit 0 when all are within rtol, 1 otherwise,
// and 1 when the model or its data is missing (a missing model fails, never skips).
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "load/loader.h"
#include "backend/plan/plan_file.h"
#include "pipeline/prepare_model.h"

int main(int argc, char** argv) {
  using namespace onnxfuse;
  if (argc < 2) {
    std::cerr << "usage: onnxfuse_run_reference MODEL_DIR [--no-fuse] [--rtol R] [--strategy S]\n";
    return 2;
  }
  std::string dir = argv[1], strategy = "postdom", plan_path;
  bool fuse = true;
  double rtol = 1e-4;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--no-fuse") fuse = false;
    else if (arg == "--rtol" && i + 1 < argc) rtol = std::stod(argv[++i]);
    else if (arg == "--strategy" && i + 1 < argc) strategy = argv[++i];
    else if (arg == "--plan" && i + 1 < argc) plan_path = argv[++i];
    else return std::cerr << "unknown argument " << arg << "\n", 2;
  }
  try {
    std::string model = dir + "/model.onnx", data = dir + "/test_data_set_0";
    if (!std::filesystem::exists(model)) {
      std::cerr << "missing " << model << ": run scripts/export_models.py\n";
      return 1;
    }
    std::optional<LoadedPlan> loaded;
    std::optional<Graph> graph;
    std::optional<ExecutablePlan> compiled;
    if (!plan_path.empty()) {
      loaded.emplace(ReadPlanFile(plan_path));
      const PlanFileInfo& info = loaded->info;
      std::cout << plan_path << ": built for " << info.built_isa << ", running on " << info.running_isa << ", "
                << info.constants << " constants: " << info.constants_reused << " as stored, " << info.constants_relaid
                << " reordered, " << info.constants_repacked << " repacked\n";
    } else {
      graph.emplace(LoadModel(model));
      FuseSettings settings;  // as the pipeline fuses: with the library's pattern regions
      settings.strategy = strategy == "greedy" ? Strategy::kGreedy : Strategy::kPostdom;
      FusionPlan plan = FuseGraph(*graph, settings);
      compiled.emplace(ExecutablePlan::Compile(*graph, plan, CompileOptions{fuse}));
    }
    if (loaded && !loaded->executable) {
      std::cerr << model << ": a plan of a model run in stages; use onnx-fuse run\n";
      return 1;
    }
    ExecutablePlan& exec = loaded ? *loaded->executable : *compiled;
    auto outputs = exec.Run(MatchInputs(loaded ? *loaded->graph : *graph, ReadTensorDir(data, "input")));
    auto expected = ReadTensorDir(data, "output");
    if (expected.size() != outputs.size()) {
      std::cerr << "expected " << expected.size() << " outputs, got " << outputs.size() << "\n";
      return 1;
    }
    bool ok = true;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      TensorDiff d = CompareTensors(expected[i], outputs[i]);
      bool pass = !d.shape_mismatch && d.max_rel <= rtol;
      ok &= pass;
      std::cout << dir << " " << (fuse ? "fused" : "unfused") << " output " << outputs[i].name << ": max abs "
                << d.max_abs << ", max rel " << d.max_rel << (pass ? " ok" : " FAILED") << "\n";
    }
    const PlanStats& s = exec.stats();
    std::cout << "  kernels " << s.kernels << ", reorders " << s.reorders << ", arena " << s.arena_bytes
              << " B, intermediates " << s.intermediate_bytes_total << " B\n";
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << dir << ": " << e.what() << "\n";
    return 1;
  }
}
