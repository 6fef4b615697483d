// `onnx-fuse quantize`: a float model calibrated on sample inputs and written
// as a QDQ model (uint8 activations, int8 per-channel weights, int32 biases,
// as ONNX Runtime's static quantizer writes it), with an accuracy report.
//
// Steps (src/quantize/): the model prepared for an ONNX target with
// BatchNormalization folded into convolutions (ONNX Runtime's quantization
// pre-processing); the sites (quantization_sites.h); the activation ranges
// (calibration.h); each product's own error (layer_error.h), the products
// beyond --max-error kept float; the QDQ model (qdq_insertion.h); then the
// float and quantized models run fused on every sample (accuracy.h). The
// model is written last, atomically: a failure leaves nothing behind.
#pragma once

#include <ostream>
#include <string>

#include "quantize/calibration.h"

namespace onnxfuse {

struct QuantizeOptions {
  std::string model_path;
  std::string output_path;
  std::string calibration_dir;   ///< samples: quantize::ReadSamples
  quantize::CalibrationOptions calibration;
  /// A product whose relative RMS error (layer_error.h) exceeds this stays
  /// float; negative: every product is quantized.
  double max_error = -1;
  int weight_bits = 8;           ///< 8 (|w| <= 127) or 7 (|w| <= 63: ONNX Runtime's reduce_range, for CPUs without VNNI)
  std::string report_path;       ///< the report as JSON here; "" none, "-" stdout
  int threads = 0;               ///< OpenMP threads; 0 = the OpenMP default
};

/// Quantizes `options.model_path` into `options.output_path` and prints a
/// summary to `out`: the layers quantized and kept float (with their
/// errors), and per float output the max and mean absolute error of the
/// quantized model against the float one over the samples, with top-1
/// agreement for [N, C] outputs. Throws Error: kUsage for a missing or
/// input-naming output path, weight_bits other than 7 or 8, a percentile
/// outside (0, 100]; kIo for a calibration folder without samples or a file
/// that cannot be written; kUnsupported for a model with nothing to quantize
/// (no Conv, Gemm or MatMul with constant weights) or whose shapes follow its
/// values; what loading and running the model throw.
void RunQuantizeJob(const QuantizeOptions& options, std::ostream& out);

}  // namespace onnxfuse
