#include "session/primitive_cache.h"

#include <cstdlib>

#include <dnnl.hpp>

namespace onnxfuse::session {

void BoundPrimitiveCache() {
  if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr) return;  // the user's choice
  if (dnnl::get_primitive_cache_capacity() > kPrimitiveCacheCapacity)
    dnnl::set_primitive_cache_capacity(kPrimitiveCacheCapacity);
}

}  // namespace onnxfuse::session
