// Choosing among oneDNN's implementations of a primitive by a fixed
// preference (backend/lower/core/impl_choice.cc).
#pragma once

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The implementation to run for `pd`'s operation and attributes: among
/// oneDNN's implementations that read and write the same layouts as `pd`, for
/// the same instruction set, and are not slow (IsSlowImpl), the one named
/// `preferred` before its ISA ("jit_dw" for "jit_dw:avx2"); `pd`'s own implementation,
/// oneDNN's first choice, when none does. Replaying a plan file, the one it
/// stored for `key` (Builder::StoredImpl) when it is among them.
/// The choice depends only on the CPU's instruction set, never on timing, so
/// two compilations of one model run the same kernels and give the same bits.
/// Throws dnnl::error only when oneDNN fails to create a candidate.
dnnl::primitive_desc ChooseImpl(Builder& b, const dnnl::primitive_desc& pd, const std::string& kind,
                                const std::string& key, const std::string& preferred);

}  // namespace onnxfuse::backend
