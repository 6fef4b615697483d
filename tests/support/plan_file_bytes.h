// Helpers for tests of the plan file (tests/unit/backend/plan/): plan files
// made by hand around a payload, so that a test can alter a payload behind a valid header and
// checksum (src/backend/plan/plan_file.h gives the layout).
#pragma once

#include <cstdint>
#include <string>

#include "backend/plan/plan_file.h"
#include "onnxfuse_plan.pb.h"

namespace onnxfuse::test {

/// A plan file's bytes: the 24-byte header (magic, `version`, the CRC-32 of
/// `payload`, its length) followed by `payload`.
std::string WithHeader(const std::string& payload, std::uint32_t version = kPlanFormatVersion);

/// The Plan message of a plan file's bytes (after its header); fails the test
/// when it does not parse.
planfile::Plan Payload(const std::string& file_bytes);

}  // namespace onnxfuse::test
