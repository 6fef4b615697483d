#include "onnxfuse/error.h"

namespace onnxfuse {

void Check(bool condition, const std::string& message) {
  if (!condition) throw Error(ErrorKind::kInternal, "internal error: " + message);
}

}  // namespace onnxfuse
