// The fusion report (JSON). Schema documented in docs/cli.md "Fusion report".
#pragma once

#include <nlohmann/json.hpp>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "write/onnx_writer.h"

namespace onnxfuse {

inline constexpr int kReportSchemaVersion = 2;

/// Wall time of each pipeline stage, in milliseconds.
struct StageTimes {
  double load_ms = 0, classify_ms = 0, fuse_ms = 0;
  double build_ms = 0;  ///< building the rewritten ModelProto
  double check_ms = 0;  ///< onnx::checker and strict shape inference on it
  double save_ms = 0;   ///< serializing and writing it
};

/// Builds the report: model summary, groups, rejections, totals, stage times.
nlohmann::json BuildReport(const Graph& graph, const std::vector<OpPatternKind>& kinds, const FusionPlan& plan,
                           const std::vector<std::string>& function_of_group, const StageTimes& times);

}  // namespace onnxfuse
