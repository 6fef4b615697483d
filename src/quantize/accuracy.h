// The accuracy report of a quantization: the float model's outputs against
// the quantized model's on the same samples.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor_io.h"

namespace onnxfuse::quantize {

/// One graph output over every sample.
struct OutputAccuracy {
  std::string name;
  double max_abs_error = 0;   ///< max |int8 - float| over every element of every sample
  double mean_abs_error = 0;  ///< mean |int8 - float| over them
  double max_abs_float = 0;   ///< max |float|: the scale the errors compare with
  /// Share of rows whose arg-max is the same (first index on ties), for an
  /// output of shape [N, C], C > 1 (a classifier's scores); -1 for other shapes.
  double top1_agreement = -1;
  std::int64_t rows = 0;      ///< rows compared for it
};

/// Accumulates OutputAccuracy over samples, output by output.
class AccuracyMeter {
 public:
  /// Adds one sample's outputs (by name; float outputs only, in `float_outputs`' order of names).
  void Add(const std::map<std::string, Tensor>& float_outputs, const std::map<std::string, Tensor>& int8_outputs);
  std::vector<OutputAccuracy> Result() const;

 private:
  struct Sums {
    OutputAccuracy a;
    double abs_sum = 0;
    std::int64_t elements = 0, agreeing_rows = 0;
  };
  std::vector<std::string> order_;
  std::map<std::string, Sums> sums_;
};

}  // namespace onnxfuse::quantize
