// Choosing among oneDNN's implementations of a primitive by timing them
// (backend/lower/core/impl_choice.cc).
#pragma once

#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The implementation to run for `pd`'s operation and attributes: among
/// oneDNN's implementations that read and write the same layouts as `pd` and
/// are not slow (IsSlowImpl), the fastest on this CPU, timed at build time
/// (median of 7 runs in interleaved rounds, in ms, on scratch buffers for `arg_keys`, the DNNL_ARG_*
/// the step will bind); `pd`'s own implementation, oneDNN's first choice,
/// unless another is at least 5% faster. Replaying a plan file, the one it
/// stored for `key` (Builder::StoredImpl) when it is among them.
/// Throws dnnl::error only when oneDNN fails to create or run a candidate.
dnnl::primitive_desc ChooseImpl(Builder& b, const dnnl::primitive_desc& pd, const std::string& kind,
                                const std::string& key, const std::vector<int>& arg_keys);

}  // namespace onnxfuse::backend
