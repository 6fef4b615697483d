// `onnx-fuse run` of a model whose shapes follow values (NonZero,
// NonMaxSuppression, an If or Loop decided at run time, a Reshape or TopK of
// a computed size): no one schedule serves it, so it runs in stages
// (src/session/staged_model.h), as InferenceSession runs it.
#pragma once

#include <memory>
#include <ostream>

#include "app/run_job.h"
#include "ir/graph.h"
#include "pipeline/prepare_model.h"

namespace onnxfuse {

/// Times `prepared` (the model prepared by RunJob's front door with its
/// run-time control flow kept, `prepare` its options) in stages: warmup and
/// iterations as RunJob, outputs written to options.outputs_dir. Prints the
/// times and what the stages did (stages made and found in their cache,
/// nodes evaluated between them), as a table or one JSON line with "staged":
/// {...} in place of the one schedule's kernels. With check, runs the
/// unfused stages on the same inputs and compares each output (max abs, max
/// rel against check_rtol). Returns 0, or 1 when the check fails. Throws
/// Error as RunJob; Error(kUsage) for --profile, which times one schedule's
/// steps.
int RunStagedJob(const RunOptions& options, std::shared_ptr<const Graph> prepared, const PrepareOptions& prepare,
                 double load_ms, std::ostream& out);

}  // namespace onnxfuse
