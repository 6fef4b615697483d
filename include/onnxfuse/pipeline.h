// The `onnx-fuse input.onnx -o out.onnx` job as one call: load, classify, fuse,
// write, report. main() parses the command line into a FuseJob and maps the
// Errors this throws to exit codes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "onnxfuse/fusion_plan.h"
#include "onnxfuse/loader.h"

namespace onnxfuse {

struct FuseJob {
  std::string input_path;
  std::string output_path;       ///< "" = do not write a model
  std::string report_path;       ///< "" = no report; "-" = stdout
  std::string strategy = "postdom";  ///< "postdom" | "greedy"
  LoadOptions load;
  FuserOptions fuser;
  bool check = true;             ///< run onnx::checker (full) on the written model
};

/// Strategy names accepted by FuseJob::strategy, in the order `--help` lists them.
const std::vector<std::string>& StrategyNames();

/// Runs the job and returns its report. Throws Error: kUsage when output_path
/// names the input file (the input is never overwritten) or the strategy is
/// unknown; the loader's errors; kIo when a file cannot be written. Outputs are
/// written atomically, so a failure leaves no partial file.
nlohmann::json RunFuseJob(const FuseJob& job);

}  // namespace onnxfuse
