// Where a float model is quantized: the products whose weights become int8
// ("anchors") and the activations that get a QuantizeLinear ->
// DequantizeLinear pair.
//
// The choice is ONNX Runtime's static quantizer's in QDQ format with its
// default op list (onnxruntime/python/tools/quantization/registry.py,
// QDQRegistry): Conv, Gemm and MatMul are quantized with their weights; the
// activations that they, Add, Concat, MaxPool, AveragePool and
// GlobalAveragePool read or write are quantized where they are made. A
// product followed by its only consumer, a Relu or Clip, is quantized after
// that activation (the quantizer folds it into the quantized range).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse::quantize {

/// A product quantized with its weights.
struct Anchor {
  int node = -1;             ///< index into graph.node
  std::string name;          ///< NodeName
  std::string op_type;       ///< Conv, Gemm or MatMul
  int weight_axis = 0;       ///< the axis of the weights' per-channel scales
  int bias_slot = -1;        ///< the input slot of a bias quantized with them, -1: none
  std::vector<std::string> data_inputs;  ///< the activations it reads (not constants)
  std::string output;        ///< what it writes (the product's output)
};

struct QuantizationSites {
  std::vector<Anchor> anchors;
  /// Activations to quantize, in graph order (graph inputs first), each once:
  /// only those some node reads (a graph output nothing reads stays float).
  std::vector<std::string> activations;
};

/// A node's name, or "<op_type>_<index>" for an unnamed one (as the loader names it).
std::string NodeName(const onnx::NodeProto& node, int index);

/// The sites of `graph` (topologically sorted, as the loader leaves it). A
/// Conv, Gemm or MatMul is an anchor when its weights (input 1) are an
/// initializer of rank 2 or more; one in `keep_float` (NodeName) is not,
/// and its data inputs and output are quantized only where another site
/// reads or writes them.
QuantizationSites FindQuantizationSites(const onnx::GraphProto& graph, const std::set<std::string>& keep_float = {});

}  // namespace onnxfuse::quantize
