// Squeeze-and-excitation's excitation as one kernel of ours
// (backend/lower/fused/squeeze_excite.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The nodes of a squeeze-and-excitation excitation, as the pattern library
/// found them (patterns/squeeze_excitation.onnxtxt): 1x1 Conv of a
/// [1, C, 1, 1] activation, Relu or swish, 1x1 Conv back to C channels,
/// Sigmoid or HardSigmoid. One step of our own computes it (both
/// matrix-vector products and activations) from: the first activation's nodes
/// (Relu; or Sigmoid then Mul) between the two 1x1 Convs, the gate (Sigmoid,
/// or HardSigmoid with its alpha and beta), C (channels) and C/r (reduced).
struct SqueezeExcite {
  enum class Act1 { kRelu, kSwish };
  const Node *fc1 = nullptr, *fc2 = nullptr, *gate = nullptr;
  std::vector<const Node*> act1;
  Act1 kind = Act1::kRelu;
  bool hard_gate = false;
  float alpha = 0, beta = 0;
  std::int64_t channels = 0, reduced = 0;
};
/// Checks what the kernel needs of `se` (fc1, act1, kind, fc2, gate set; fused
/// mode; both Convs 1x1 with constant float weights on a [1, C, 1, 1]
/// activation, fc2 back to C channels) and sets the rest; false when it does
/// not fit.
bool BindSqueezeExcite(Builder& b, SqueezeExcite& se);
/// The kernel's one step for a bound `se`, labelled with its nodes; absorbs them
/// and sets the gate's output.
void EmitSqueezeExcite(Builder& b, const SqueezeExcite& se);

}  // namespace onnxfuse::backend
