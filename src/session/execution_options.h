// How a model is prepared to be executed: one set of options for every door
// that runs one (InferenceSession, `onnx-fuse run`, a staged plan file), so
// that they accept the same models and fuse them alike.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/prepare_model.h"

namespace onnxfuse::session {

/// The executable target with the backend's lowered ops
/// (backend/lower/core/lowered_ops.h) and run-time control flow kept for the
/// staged model (staged_model.h), fused by `strategy` with the pattern
/// library `patterns` (null: the built-in library, loaded by PrepareModel).
/// Input shapes are the caller's to pin (`load.input_shapes`), fusion
/// its to turn off (`fuse`).
PrepareOptions ExecutionOptions(Strategy strategy, std::shared_ptr<const std::vector<Pattern>> patterns = nullptr);

}  // namespace onnxfuse::session
