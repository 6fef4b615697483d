// The library's version, for an application that links libonnxfuse.
#pragma once

namespace onnxfuse {

/// "MAJOR.MINOR.PATCH" of the libonnxfuse the process runs with (the same
/// as `onnx-fuse --version`).
const char* Version();

}  // namespace onnxfuse
