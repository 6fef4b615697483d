// Guards around libonnx 1.12 shape-inference functions that read out of bounds
// on malformed models (found by fuzz/fuzz_model_loader). Internal to the loader.
#pragma once

namespace onnxfuse::detail {

/// Wraps the type-and-shape inference function of the affected operator
/// schemas in libonnx's registry (once per process; thread-safe) with a check
/// that refuses, or skips, the inputs the original would crash on:
///   - Conv, ConvInteger, QLinearConv, ConvTranspose: the weight's rank must
///     equal the input's (the original indexes per-axis attribute vectors and
///     input dims by the weight's spatial rank: a rank-3 X with a rank-4 W
///     reads past both); refused with an InferenceError naming both ranks.
///   - MaxUnpool: indexes dim 1 of input I without checking I's shape; with
///     no shape or rank < 2 only the element type is inferred.
///   - Shape: its data propagation reads its input's type without checking
///     that there is one (there is none below a node whose inference
///     failed); then it is skipped, and the collected error refuses the model.
/// Operators libonnx fixed later are still guarded: the checks are what the
/// spec requires anyway.
void InstallOnnxInferenceGuards();

}  // namespace onnxfuse::detail
