// The QDQ format's fake quantization of an activation: a QuantizeLinear whose
// integer output only DequantizeLinear nodes read (ONNX Runtime's static
// quantizer writes one such pair, or one QuantizeLinear and a
// DequantizeLinear per consumer, after every quantized activation). The
// lowering runs such pairs as one float pass or as int8 convolutions
// (backend/lower/fused/), and the output check compares plans without them
// (backend/runtime/verify.h).
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// The DequantizeLinear nodes (default domain) reading QuantizeLinear `q`'s
/// output, each once, when they are all its readers, there is at least one,
/// and the output is no graph output; nullopt otherwise (and for any node
/// that is not a QuantizeLinear of the default domain).
std::optional<std::vector<const Node*>> DequantizeReaders(const Graph& graph, const Node& q);

/// True when some QuantizeLinear of `graph` has DequantizeReaders.
bool HasFakeQuantization(const Graph& graph);

}  // namespace onnxfuse
