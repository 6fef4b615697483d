// Operands of the elementwise kernels of our own that read tensors of several
// shapes through broadcast strides (Where, broadcast binaries): a constant's
// elements, captured by the step, or an activation's plain buffer.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

template <typename T>
struct KernelOperand {
  std::shared_ptr<const std::vector<T>> constant;  ///< set for a constant
  int arg = -1;                                    ///< else the step's argument index of the activation
  Dims dims;

  /// The elements, given the step's argument data pointers.
  const T* Data(const std::vector<void*>& data) const {
    return constant ? constant->data() : static_cast<const T*>(data[static_cast<std::size_t>(arg)]);
  }
};

/// The storage type value `v` is read in at `user`: an activation's or a
/// constant's; UNDEFINED when it is neither (yet).
std::int32_t StorageOf(Builder& b, ValueId v, const Node& user);

/// Float32 value `v` (an activation, read plain, appended to `args`; or a
/// constant, counted in the plan's weight bytes) as an operand of `user`'s step.
KernelOperand<float> FloatKernelOperand(Builder& b, ValueId v, const Node& user, std::vector<std::pair<int, Arg>>& args);

}  // namespace onnxfuse::backend
