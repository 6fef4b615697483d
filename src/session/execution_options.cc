#include "session/execution_options.h"

#include <utility>

#include "backend/lower/core/lowered_ops.h"

namespace onnxfuse::session {

PrepareOptions ExecutionOptions(Strategy strategy, std::shared_ptr<const std::vector<Pattern>> patterns) {
  PrepareOptions options;
  options.target = Target::kExecutable;
  options.fusion.strategy = strategy;
  options.fusion.patterns = std::move(patterns);
  options.lowers = backend::LowersOp;
  options.keep_run_time_control_flow = true;
  return options;
}

}  // namespace onnxfuse::session
