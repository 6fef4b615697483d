// The fault the self-checks' tests inject (src/backend/lower/core/fault_injection.h):
// with ONNXFUSE_FAULT_NODE=NAME in the environment, a fused plan adds 1 to
// every element of node NAME's first output, as a step right after the group
// computing it. Nothing unfused, for other nodes, or where that output is not
// materialized (absorbed into a chain).
#pragma once

#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::test {

/// The hook (backend::FaultHook) that reads ONNXFUSE_FAULT_NODE.
void AddOneAtFaultNode(backend::Builder& b, const std::vector<NodeId>& unit);

}  // namespace onnxfuse::test
