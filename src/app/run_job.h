// `onnx-fuse run`: load, fuse, compile and time a model, or replay a plan file
// (the CLI's run job; main.cc maps its Errors to exit codes).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "onnxfuse/strategy.h"

namespace onnxfuse {

/// The options of `onnx-fuse run`.
struct RunOptions {
  std::string model_path;
  std::string inputs_dir;                                       ///< "" = RandomInputs
  std::string outputs_dir;                                      ///< "" = do not write outputs
  /// --input-shape NAME=1x3x224x224: pinned when loading a model; a plan file
  /// (format 3) is compiled at them (ReadPlanFile, PlanReadOptions::input_shapes).
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  int threads = 0;           ///< OpenMP threads; 0 = the OpenMP default (all cores or OMP_NUM_THREADS)
  int iterations = 20;       ///< timed runs
  int warmup = 3;            ///< untimed runs before them
  bool fuse = true;          ///< false: --no-fuse
  bool check = false;        ///< also run the other mode and compare outputs
  bool json = false;         ///< one JSON line instead of the table
  bool profile = false;      ///< also time each step over `iterations` more runs: the slowest steps and the time per kind
  Strategy strategy = kDefaultStrategy;  ///< fuser of the fused plan
  double check_rtol = 1e-4;  ///< --check fails beyond this max relative difference
};

/// Timing of one run job; times in milliseconds of wall-clock per inference
/// (Run(), including copying inputs in and outputs out).
struct RunStats {
  double min_ms = 0, median_ms = 0, p90_ms = 0, max_ms = 0;
  int iterations = 0;
  int threads = 0;
  bool fused = true;
  PlanStats plan;
  /// Wall-clock ms of compiling the schedule for the shapes it ran
  /// (PlanStats::compile_ms: lowering, primitive creation, weight packing).
  double compile_ms = 0;
  /// Wall-clock ms before that: loading and fusing the model, or reading the
  /// plan file and loading its model at those shapes.
  double load_ms = 0;
  /// The shapes compiled and run: every graph input of known rank by name,
  /// unknown dims as 1.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
};

/// Order statistics of `times_ms` (sorted copy; p90 by nearest rank).
RunStats Summarize(std::vector<double> times_ms);

/// Loads, fuses, compiles and times a model; prints a table (or, with json, one
/// JSON line with median_ms, min_ms, p90_ms, max_ms, iterations, threads, fused,
/// compile_ms, load_ms, input_shapes ({name: dims} compiled), kernels, reorders,
/// peak_activation_bytes, intermediate_bytes_total, ...) to `out`.
/// With check, also runs the other mode on the same inputs and prints max abs /
/// max rel difference per output. Returns 0, or 1 when --check finds an output
/// beyond check_rtol. Throws Error for bad models, files and options.
int RunJob(const RunOptions& options, std::ostream& out);

}  // namespace onnxfuse
