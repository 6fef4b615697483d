// Fusing a model from an application: what `onnx-fuse INPUT -o OUTPUT` does
// (docs/cli.md), as one call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnxfuse/strategy.h"

namespace onnxfuse {

struct FuseOptions {
  /// Where the fused model goes: an ONNX model whose fused groups are
  /// ai.onnxfuse ops defined by model-local functions, or, for a path ending
  /// in ".plan", an executable plan file (docs/plan-file.md). "" writes
  /// nothing (the report only). Written atomically: a failure leaves no file.
  std::string output_path;
  /// Also write the JSON report here ("" = no file; the result holds it anyway).
  std::string report_path;
  Strategy strategy = kDefaultStrategy;
  /// Pattern directories for strategy kPattern, after the built-in library.
  std::vector<std::string> pattern_dirs;
  /// Input name -> full shape, pinned at load (a symbolic dim takes that
  /// value everywhere), as `--input-shape`.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// Fold inference BatchNormalization into the Conv before it first.
  bool fold_bn = false;
};

struct FuseResult {
  std::string output_path;  ///< the file written ("" when none)
  /// The fusion report as JSON text: every group, every place that did not
  /// fuse and why (schema: docs/cli.md "Fusion report").
  std::string report_json;
};

/// Fuses the model at `input_path`. Throws Error (error.h): kUsage when
/// output_path names the input file (never overwritten); kIo for a file that
/// cannot be read or written; kInvalidModel and kUnsupported naming the file
/// and node, as the loader and the plan compiler raise them.
FuseResult Fuse(const std::string& input_path, const FuseOptions& options = {});

}  // namespace onnxfuse
