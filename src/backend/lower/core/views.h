// Layout-only ops and build-time values (backend/lower/core/views.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (views), Transpose (a reorder).
bool LowerView(Builder& b, NodeId node);
/// Dropout runs as the identity of its data (as a view, or as a host step when
/// its mask is read): throws Error(kUnsupported) naming the node when it drops
/// at random (training_mode true and ratio above 0, ONNX Operators.md,
/// Dropout-13; DropoutDrops) or when training_mode is only known at run time
/// (a ratio known only then counts as above 0).
void RefuseNonIdentityDropout(Builder& b, const Node& node);
/// Folds the node when all its inputs are known at build time (or it is Shape
/// of an activation). Returns false when it cannot be folded.
bool TryFold(Builder& b, NodeId node);
/// Folds, in graph order, every node that build-time evaluation handles and
/// whose inputs are all constants, before any group is lowered: a lowering
/// that looks ahead into another group (LayerNorm's affine Mul and Add) then
/// sees a weight that an Identity of an initializer produces (torch's export
/// of shared parameters) as the constant it is, whatever the groups' order.
void PrefoldConstants(Builder& b);

}  // namespace onnxfuse::backend
