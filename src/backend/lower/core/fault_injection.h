// The self-checks' test hook (onnxfuse/verify.h): a fused plan made wrong on
// purpose, so that the verification of `-o model.plan` and the localization
// of `run --check` are tested end to end (docs/testing.md "Fault injection").
// The shipped library holds only the call site: what the hook does is test
// code (tests/support/fault_injection.h), installed by the test binaries and
// the test build of the CLI, never read from the environment here.
#pragma once

#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Called after each lowered unit (the nodes of one group) of every plan
/// compiled while it is set; it may emit steps of its own.
using FaultHook = void (*)(Builder& b, const std::vector<NodeId>& unit);

/// Sets the hook (nullptr: none, the default). Plans compiled afterwards call it.
void SetFaultHook(FaultHook hook);

/// Calls the hook, if one is set, for `unit`.
void InjectFault(Builder& b, const std::vector<NodeId>& unit);

}  // namespace onnxfuse::backend
