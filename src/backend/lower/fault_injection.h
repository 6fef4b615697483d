// A test hook for the self-checks (onnxfuse/verify.h): a fused plan made wrong
// on purpose, so that the verification of `-o model.plan` and the localization
// of `run --check` are tested end to end (docs/testing.md "Fault injection").
#pragma once

#include <vector>

#include "backend/lower/builder.h"

namespace onnxfuse::backend {

/// With ONNXFUSE_FAULT_NODE=NAME in the environment, a fused plan adds 1 to
/// every element of node NAME's first output, as a step right after `unit`
/// (the group computing it) is lowered. Does nothing unfused, for other
/// groups, or when that output is not materialized (absorbed into a chain).
void InjectFault(Builder& b, const std::vector<NodeId>& unit);

}  // namespace onnxfuse::backend
