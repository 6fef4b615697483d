// Activation ranges from running the float model on calibration samples.
//
// min/max: each activation's smallest and largest value over every sample.
// percentile: ONNX Runtime's HistogramCalibrater in its percentile method
// (onnxruntime/python/tools/quantization/calibrate.py, compute_percentile,
// for asymmetric ranges): a histogram of each activation's values over its
// min/max range (2048 bins), cut where the cumulative count passes
// (100 - percentile) / 200 at each end, so that the outliers beyond it
// saturate and the rest gets finer steps.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "quantize/model_runs.h"

namespace onnxfuse::quantize {

enum class CalibrationMethod { kMinMax, kPercentile };

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.999;  ///< kPercentile: the share of values kept, in percent (ONNX Runtime's default)
  int bins = 2048;             ///< kPercentile: histogram bins (ONNX Runtime's default num_bins)
};

struct Range {
  double low = 0, high = 0;
};

/// Each of `names` (values of `model`) -> its range over `samples`. The
/// model runs unfused with those values as extra outputs, once per sample
/// (twice for kPercentile: ranges, then histograms). Throws what ModelRuns
/// throws; Error(kInvalidModel) for a name the model does not define, or an
/// activation that is not finite on some sample (NaN or infinity).
std::map<std::string, Range> Calibrate(const onnx::ModelProto& model, const std::string& source_name,
                                       const std::vector<std::string>& names, const std::vector<Sample>& samples,
                                       const CalibrationOptions& options);

/// `model` with each of `names` also a graph output, typed by ONNX shape
/// inference, for a run that reads them. Throws Error(kInvalidModel) for a
/// name it gives no type (not a value of the model), and what
/// InferValueShapes throws.
onnx::ModelProto WithOutputs(const onnx::ModelProto& model, const std::vector<std::string>& names);

}  // namespace onnxfuse::quantize
