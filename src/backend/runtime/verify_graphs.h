// The graphs the output check (verify.h) compiles besides the model: the
// model with more of its values kept as outputs, and the model cut at its
// quantized activations, so that each int8 layer is compared on the same
// inputs in both plans.
#pragma once

#include <cstdint>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse {

/// `graph` with `values` added to its outputs (typed with their inferred
/// types); the same nodes in the same order, so the same node ids.
Graph WithOutputs(const Graph& graph, const std::vector<ValueId>& values);

/// A quantized activation: the output of a QuantizeLinear of computed values
/// that only DequantizeLinear nodes read (ir/fake_quantization.h).
struct QuantizedActivation {
  NodeId quantize = kNoNode;
  ValueId dequantized = kNoValue;  ///< the output of its first DequantizeLinear reader
  std::vector<float> scale;        ///< the QuantizeLinear's y_scale: one, or one per index of its axis
  std::int64_t inner = 1;          ///< elements per index of that axis (product of the dims after it)
};

/// Every quantized activation of `graph` whose shape is known and whose
/// readers dequantize it with the QuantizeLinear's own scale and zero point
/// (ONNX Runtime's quantizer gives both the same initializers), in node order.
std::vector<QuantizedActivation> QuantizedActivations(const Graph& graph);

/// `graph` cut at `activations` (QuantizedActivations of it), and its fusion.
///
/// For each activation x = QuantizeLinear(a), the graph reads it from a new
/// float input instead (named as the activation's first dequantized reader's
/// output, plus "_reference"), through a copy of the QuantizeLinear placed
/// just before it. The QuantizeLinear itself writes a new value that a new
/// DequantizeLinear, at the end, gives out as the graph output named
/// `checked_outputs[i]`. Fed each activation's dequantized value from a run of
/// the model, every layer between quantized activations computes from the
/// same integers in any plan.
///
/// The fusion keeps every group of `plan` (on the same nodes, renumbered);
/// each new node is a group of its own.
struct CutGraph {
  Graph graph;
  FusionPlan plan;
  std::vector<std::string> reference_inputs;  ///< per activation, the new float input
  std::vector<std::string> checked_outputs;   ///< per activation, its value as computed, dequantized
};
CutGraph CutAtQuantizedActivations(const Graph& graph, const FusionPlan& plan,
                                   const std::vector<QuantizedActivation>& activations);

}  // namespace onnxfuse
