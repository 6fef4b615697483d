// Linked into the test build of the CLI (onnxfuse_cli_with_faults, from
// src/app/main.cc): installs the fault hook before main runs, so that
// ONNXFUSE_FAULT_NODE makes its fused plans wrong (tests/e2e/cli_test.sh).
#include "backend/lower/core/fault_injection.h"
#include "fault_injection.h"

namespace {

const bool installed = [] {
  onnxfuse::backend::SetFaultHook(&onnxfuse::test::AddOneAtFaultNode);
  return true;
}();

}  // namespace
