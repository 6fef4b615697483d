// The fault the self-checks' tests inject (src/backend/lower/core/fault_injection.h):
// with ONNXFUSE_FAULT_NODE=NAME in the environment, a fused plan adds 1 to
// every element of node NAME's first output, as a step right after the group
// that computes it (which may be another node's group: an int8 convolution
// takes its QuantizeLinear); to an 8-bit activation it adds 3 steps (-3
// where that would saturate), beyond the quantization rule's two. Nothing
// unfused, or where that output is not materialized (absorbed into a chain).
#pragma once

#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::test {

/// The hook (backend::FaultHook) that reads ONNXFUSE_FAULT_NODE.
void AddOneAtFaultNode(backend::Builder& b, const std::vector<NodeId>& unit);

}  // namespace onnxfuse::test
