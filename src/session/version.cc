// Version (include/onnxfuse/version.h). Compiled into the shared library
// libonnxfuse only (its one source; the stages come in as whole archives).
#include "onnxfuse/version.h"

namespace onnxfuse {

const char* Version() { return ONNXFUSE_VERSION; }

}  // namespace onnxfuse
