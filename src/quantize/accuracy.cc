#include "quantize/accuracy.h"

#include <algorithm>
#include <cmath>

#include "onnxfuse/error.h"

namespace onnxfuse::quantize {

namespace {

std::size_t ArgMax(const float* row, std::int64_t n) {
  return static_cast<std::size_t>(std::max_element(row, row + n) - row);
}

}  // namespace

void AccuracyMeter::Add(const std::map<std::string, Tensor>& float_outputs,
                        const std::map<std::string, Tensor>& int8_outputs) {
  for (const auto& [name, f] : float_outputs) {
    if (f.elem_type != 1) continue;
    const auto q = int8_outputs.find(name);
    if (q == int8_outputs.end() || q->second.dims != f.dims)
      throw Error(ErrorKind::kInternal, "quantized model's output '" + name + "' is missing or has another shape");
    if (!sums_.count(name)) order_.push_back(name);
    Sums& s = sums_[name];
    s.a.name = name;
    for (std::size_t i = 0; i < f.data.size(); ++i) {
      const double e = std::fabs(static_cast<double>(q->second.data[i]) - static_cast<double>(f.data[i]));
      s.a.max_abs_error = std::max(s.a.max_abs_error, e);
      s.a.max_abs_float = std::max(s.a.max_abs_float, std::fabs(static_cast<double>(f.data[i])));
      s.abs_sum += e;
    }
    s.elements += static_cast<std::int64_t>(f.data.size());
    if (f.dims.size() == 2 && f.dims[1] > 1) {
      for (std::int64_t r = 0; r < f.dims[0]; ++r) {
        const float* fr = f.data.data() + r * f.dims[1];
        const float* qr = q->second.data.data() + r * f.dims[1];
        s.agreeing_rows += ArgMax(fr, f.dims[1]) == ArgMax(qr, f.dims[1]) ? 1 : 0;
        ++s.a.rows;
      }
    }
  }
}

std::vector<OutputAccuracy> AccuracyMeter::Result() const {
  std::vector<OutputAccuracy> result;
  for (const auto& name : order_) {
    const Sums& s = sums_.at(name);
    OutputAccuracy a = s.a;
    a.mean_abs_error = s.elements > 0 ? s.abs_sum / static_cast<double>(s.elements) : 0;
    if (a.rows > 0) a.top1_agreement = static_cast<double>(s.agreeing_rows) / static_cast<double>(a.rows);
    result.push_back(a);
  }
  return result;
}

}  // namespace onnxfuse::quantize
