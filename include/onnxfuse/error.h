// The errors onnx-fuse reports to its user, and the process exit code of each.
//
// Three tiers (see docs/api.md "Errors"): an `Error` is thrown at I/O and API
// boundaries for bad input and is caught in main() only; a fusion that does not
// happen is not an error but a recorded reason in the FusionPlan; a broken
// internal invariant is an `InternalError` (a bug, exit code 70).
#pragma once

#include <stdexcept>
#include <string>

namespace onnxfuse {

/// Categories of user-facing failure; each maps to one documented exit code.
enum class ErrorKind {
  kUsage = 2,         ///< bad command line, e.g. -o equal to the input path
  kInvalidModel = 3,  ///< not a protobuf, truncated, cycle, dangling value, duplicate names, ...
  kUnsupported = 4,   ///< a construct onnx-fuse does not handle (e.g. opset newer than libonnx)
  kIo = 5,            ///< a file could not be read or written
  kVerification = 6,  ///< a fused plan computes other outputs than the unfused one (a bug in onnx-fuse)
  kInternal = 70,     ///< a broken invariant: a bug in onnx-fuse (EX_SOFTWARE)
};

/// A user-facing failure. `what()` is one line naming the file, the node and the reason.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

/// Throws an `Error` of kind kInternal when `condition` is false. For invariants
/// that user input cannot break; user input is validated with `Error` instead.
void Check(bool condition, const std::string& message);

}  // namespace onnxfuse
