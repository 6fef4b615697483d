// How much each product loses to its own quantization, measured apart from
// every other layer's: the sensitivity that decides which layers stay float.
//
// Each anchor gets a twin next to it in one probe model: the same node
// reading the float model's own input quantized and dequantized (its
// calibrated uint8 parameters), and its weights and bias as the QDQ model
// holds them (qdq_insertion.h). The probe runs unfused on every calibration
// sample; an anchor's error is the relative RMS difference between its twin's
// output and its own, sqrt(sum (twin - float)^2 / sum float^2) over every
// element of every sample. Upstream layers' errors are not in it (the twin
// reads the float model's input), so a layer is judged by what quantizing it
// alone does: the "layer-wise" view of ONNX Runtime's qdq_loss_debug.py.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "quantize/model_runs.h"
#include "quantize/quantization_params.h"
#include "quantize/quantization_sites.h"

namespace onnxfuse::quantize {

struct LayerError {
  std::string node;      ///< the anchor's node name
  std::string op_type;   ///< Conv, Gemm or MatMul
  double relative_rms = 0;
};

/// One entry per anchor of `sites`, in their order. `params` holds each
/// anchor's data inputs' parameters (an input without is read in float).
/// Throws what ModelRuns and InsertQdq throw.
std::vector<LayerError> MeasureLayerErrors(const onnx::ModelProto& model, const std::string& source_name,
                                           const QuantizationSites& sites,
                                           const std::map<std::string, ActivationParams>& params, int weight_qmax,
                                           const std::vector<Sample>& samples);

}  // namespace onnxfuse::quantize
