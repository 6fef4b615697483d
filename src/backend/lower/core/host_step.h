// Host steps: a node run at inference time by the host evaluator
// (host_eval.h, EvalOnHost: plain loops in double precision) instead of a
// oneDNN primitive.
//
// They carry what oneDNN 2.6 has no primitive for and what is rarely on the
// hot path: integer and bool tensors computed at run time (shape arithmetic,
// indices, masks: Equal, Where, Cast, Gather with run-time indices, ArgMax,
// ...), and float ops no lowering handles but the evaluator knows. Inputs are
// read as dense row-major tensors (a float input in a blocked layout is
// reordered to plain first); outputs get fresh slots in their storage type
// (builder.h, Act). Each output is narrowed to its ONNX element type after
// evaluation: integers wrapped to the type's width, bool to 0/1, float16
// rounded to the nearest half (the semantics of computing in that type; float64
// is computed in double and stored as float32).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// True when `node` must be a host step: it reads an INT64 activation, or one
/// of its outputs has an integer or bool type (and it is not folded at build
/// time). Nodes whose inputs are all constants are folded before this is asked.
bool NeedsHostStep(const Builder& b, const Node& node);

/// Lowers node `id` to one host step (kind "host", implementation
/// "onnxfuse:host"). Output dims come from shape inference, or, for
/// elementwise ops, from broadcasting the inputs' dims. Throws
/// Error(kUnsupported) naming the node when the evaluator does not know the op
/// (HostEvaluable), when an output's dims are not known at build time (they
/// depend on run-time values: NonZero, Range or Tile of computed inputs), or
/// when an output's element type has no storage type (STRING, complex,
/// bfloat16). At run time, an output whose dims differ from the built ones
/// raises Error(kUnsupported).
void EmitHostStep(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
