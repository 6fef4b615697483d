// Fake quantization: an activation quantized and read back as float.
//   - The QDQ format: a QuantizeLinear whose integer output only
//     DequantizeLinear nodes read (ONNX Runtime's static quantizer writes one
//     such pair, or one QuantizeLinear and a DequantizeLinear per consumer,
//     after every quantized activation).
//   - Dynamic quantization: a DynamicQuantizeLinear whose y and zero point
//     only Casts to float read (ONNX Runtime's quantize_dynamic form, once
//     rewrite/integer_products_as_float.h has made its integer products float).
// The lowering runs them as float passes or int8 convolutions
// (backend/lower/fused/), and the output check compares plans without them
// (backend/runtime/verify.h).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// The DequantizeLinear nodes (default domain) reading QuantizeLinear `q`'s
/// output, each once, when they are all its readers, there is at least one,
/// and the output is no graph output; nullopt otherwise (and for any node
/// that is not a QuantizeLinear of the default domain).
std::optional<std::vector<const Node*>> DequantizeReaders(const Graph& graph, const Node& q);

/// The Casts to float reading DynamicQuantizeLinear `q`'s y (first) and
/// y_zero_point (second) when they are all their readers, y has at least
/// one, and neither is a graph output; nullopt otherwise (and for any node
/// that is not a DynamicQuantizeLinear of the default domain).
std::optional<std::pair<std::vector<const Node*>, std::vector<const Node*>>> FloatCastsOfDynamicQuantize(
    const Graph& graph, const Node& q);

/// True when some QuantizeLinear of `graph` has DequantizeReaders, or some
/// DynamicQuantizeLinear has FloatCastsOfDynamicQuantize.
bool HasFakeQuantization(const Graph& graph);

}  // namespace onnxfuse
