// Writes the QDQ model: a float model with its activations quantized and
// dequantized where they are made, and its anchors' weights and biases held
// as integers read through DequantizeLinear, as ONNX Runtime's static
// quantizer writes it in QDQ format (QuantFormat.QDQ). ONNX Runtime, and
// onnx-fuse's int8 path (src/backend/lower/fused/int8_conv.h), run it.
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "quantize/quantization_params.h"
#include "quantize/quantization_sites.h"

namespace onnxfuse::quantize {

/// `model` (opset 13 or later: per-axis DequantizeLinear) with:
///  - each activation in `activations` followed by QuantizeLinear ->
///    DequantizeLinear (uint8, its scale and zero point), every consumer
///    reading the dequantized value; a graph output stays the float value;
///  - each anchor of `sites` reading its weights as int8 (QuantizeWeights at
///    `weight_qmax`, per channel along Anchor::weight_axis) through a
///    DequantizeLinear, and its bias, when its data input is quantized and
///    the bias has one value per channel, as int32 (QuantizeBias);
///  - float weights and biases nothing reads any more removed.
/// New names avoid every name of the model (rewrite/name_source.h).
/// Throws Error(kInvalidModel) when an anchor's weights or bias are not float32 initializers.
onnx::ModelProto InsertQdq(const onnx::ModelProto& model, const QuantizationSites& sites,
                           const std::map<std::string, ActivationParams>& activations, int weight_qmax);

}  // namespace onnxfuse::quantize
