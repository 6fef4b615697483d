// The `onnx-fuse input.onnx -o out.onnx` job as one call: load, classify, fuse,
// write, report. main() parses the command line into a FuseJob and maps the
// Errors this throws to exit codes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuse/fusion_plan.h"
#include "load/loader.h"
#include "patterns/pattern.h"
#include "onnxfuse/strategy.h"

namespace onnxfuse {

struct FuseJob {
  std::string input_path;
  std::string output_path;       ///< "" = do not write a model
  std::string report_path;       ///< "" = no report; "-" = stdout
  Strategy strategy = kDefaultStrategy;
  LoadOptions load;
  FuserOptions fuser;
  bool check = true;             ///< run onnx::checker (full) on the written model
  bool verify = true;            ///< plan files: run the fused plan next to the unfused one before writing (WritePlanFile)
  bool fold_bn = false;          ///< fold inference BatchNormalization into the preceding Conv first
  /// "functions": fused groups as ai.onnxfuse ops defined by model-local functions;
  /// "plain": standard ONNX only (BN folded, no custom ops) for runtimes without functions;
  /// "plan": an executable plan file for `onnx-fuse run` (plan_file.h), also chosen
  /// by an output path ending in ".plan".
  std::string emit = "functions";
  /// Pattern directories for strategy "pattern": the built-in library first, then these.
  std::vector<std::string> pattern_dirs;
  std::string explain_node;      ///< print why this node ended where it did ("" = no)
  std::string dot_path;          ///< write the fused graph for Graphviz here ("" = no)
  std::string svg_path;          ///< render it to SVG with Graphviz `dot` here ("" = no)
};

/// The built-in pattern library plus `extra_dirs`, in that order. Throws what
/// LoadPatternDir throws; a name defined twice is an error naming both files.
std::vector<Pattern> LoadPatterns(const std::vector<std::string>& extra_dirs);

/// True when the job writes an executable plan file rather than an ONNX model:
/// emit "plan", or an output path ending in ".plan". Throws Error(kUsage) for
/// emit "plain" with a ".plan" path.
bool EmitsPlanFile(const FuseJob& job);

/// Writes `plan`, the fusion of `graph`, as the executable plan file
/// `job.output_path` and returns the report's "plan_file" section. The
/// backend provides it (backend/plan: WritePlanFileForJob), so that the
/// pipeline itself builds without oneDNN.
using PlanFileWriter = std::function<nlohmann::json(const FuseJob& job, const Graph& graph, const FusionPlan& plan)>;

/// True when the executing backend lowers (domain, op_type) as it is
/// (backend/lower: LowersOp).
using OpLowered = std::function<bool(const std::string& domain, const std::string& op_type)>;

/// Runs the job and returns its report. The model is prepared by the front
/// door (src/pipeline/prepare_model.h): for an executable target when the job
/// writes a plan file (EmitsPlanFile with an output path), which needs
/// `write_plan` (Error(kUsage) without one); given `plan_lowers`, such a job
/// replaces the function ops the backend does not lower by their ONNX function
/// bodies (the report's "expanded_functions" lists them): the plan and the
/// report describe the expanded graph. A job writing an ONNX model never
/// expands. Throws Error: kUsage when output_path names the input file (the
/// input is never overwritten); what PrepareModel throws; kIo when a file
/// cannot be written. Outputs are written atomically, so a failure leaves no
/// partial file.
nlohmann::json RunFuseJob(const FuseJob& job, const PlanFileWriter& write_plan = {}, const OpLowered& plan_lowers = {});

}  // namespace onnxfuse
