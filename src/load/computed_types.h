// Types that ONNX 1.12's shape inference leaves open but small computed
// values decide.
//
// A node that reads a computed value as a shape gets no output type from
// libonnx 1.12 when that value is not an initializer: a Slice whose ends
// come from Shape -> Gather of a static input (how exporters write the
// position ids of a sequence: arange[:, :seq_len]), and with it every value
// after it (in a BERT-shaped encoder at a pinned length, 172 of 240 values).
// The backend then cannot fold a bias Add into its MatMul, which needs the
// dims of both.
//
// SeedComputedTypes evaluates, in node order, the small values that the
// graph's static shapes and constants decide (initializers and Constant
// nodes, Shape and Size of a static type, and every op of the host evaluator,
// eval/host_eval.h, whose inputs are all known; at most kMaxSeedElements
// elements each), and records each one's type as value_info where the
// inference left it open. Inference run again then types what follows.
// On a symbolic graph, where these values hold dim symbols, it types the
// Slice and Reshape outputs they decide
// (symbolic_shape_values.h): the fusion decided once on that graph sees the
// shapes that every length has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Largest tensor, in elements, evaluated for its type.
inline constexpr std::int64_t kMaxSeedElements = 4096;

/// Adds or completes value_info of `model`'s top-level graph for the values
/// computed as above whose inferred type is not static. Returns their names
/// (none: inference has nothing more to learn from them). Never throws for
/// what it cannot evaluate: such a value stays untyped.
std::vector<std::string> SeedComputedTypes(onnx::ModelProto& model);

/// Removes the value_info of `names` (seeds that inference turned down).
void DropValueInfo(onnx::ModelProto& model, const std::vector<std::string>& names);

}  // namespace onnxfuse
