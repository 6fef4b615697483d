// Fuse (include/onnxfuse/fuse.h): the CLI's fuse job with the backend's
// plan-file writer and the ops it lowers.
#include "onnxfuse/fuse.h"

#include "backend/lower/core/lowered_ops.h"
#include "backend/plan/plan_file.h"
#include "pipeline/pipeline.h"

namespace onnxfuse {

FuseResult Fuse(const std::string& input_path, const FuseOptions& options) {
  FuseJob job;
  job.input_path = input_path;
  job.output_path = options.output_path;
  job.report_path = options.report_path;
  job.strategy = options.strategy;
  job.pattern_dirs = options.pattern_dirs;
  job.load.input_shapes = options.input_shapes;
  job.fold_bn = options.fold_bn;
  const nlohmann::json report = RunFuseJob(job, WritePlanFileForJob, backend::LowersOp);
  return {options.output_path, report.dump()};
}

}  // namespace onnxfuse
