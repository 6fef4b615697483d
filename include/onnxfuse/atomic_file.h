// Writing files so that a failure never leaves a partial or damaged file.
//
// The content goes to a unique temporary file next to the target (mkstemp),
// is fsync'ed, then rename(2)s over the target, which POSIX makes atomic
// within one file system. Any failure removes the temporary file and leaves
// the target as it was. An existing target's permissions are kept.
#pragma once

#include <functional>
#include <string>

namespace onnxfuse {

/// `write` fills the temporary file through the open descriptor and returns 0,
/// or an errno value on failure. Throws Error(kIo) "<path>: <step>: <reason>".
void WriteFileAtomically(const std::string& path, const std::function<int(int fd)>& write);

/// WriteFileAtomically for a string's bytes.
void WriteTextAtomically(const std::string& path, const std::string& text);

}  // namespace onnxfuse
