#include "quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "load/shape_inference.h"
#include "onnxfuse/error.h"

namespace onnxfuse::quantize {

onnx::ModelProto WithOutputs(const onnx::ModelProto& model, const std::vector<std::string>& names) {
  onnx::ModelProto probe = model;
  onnx::GraphProto& graph = *probe.mutable_graph();
  std::set<std::string> outputs;
  for (const auto& o : graph.output()) outputs.insert(o.name());
  // A graph output needs its type: ONNX shape inference gives every value's.
  onnx::ModelProto typed = model;
  InferValueShapes(typed);
  std::map<std::string, const onnx::ValueInfoProto*> infos;
  for (const auto& v : typed.graph().value_info()) infos[v.name()] = &v;
  for (const auto& v : typed.graph().input()) infos[v.name()] = &v;
  for (const std::string& name : names) {
    if (!outputs.insert(name).second) continue;
    const auto info = infos.find(name);
    if (info == infos.end())
      throw Error(ErrorKind::kInvalidModel, "'" + name + "' has no type ONNX shape inference can give");
    *graph.add_output() = *info->second;
  }
  return probe;
}

namespace {

const Tensor& Output(const std::map<std::string, Tensor>& outputs, const std::string& name,
                     const std::string& source_name) {
  const auto found = outputs.find(name);
  if (found == outputs.end())
    throw Error(ErrorKind::kInvalidModel, source_name + ": the calibration run did not make '" + name + "'");
  for (float x : found->second.data)
    if (!std::isfinite(x))
      throw Error(ErrorKind::kInvalidModel, source_name + ": activation '" + name +
                                                "' is not finite on a calibration sample; it cannot be quantized");
  return found->second;
}

}  // namespace

std::map<std::string, Range> Calibrate(const onnx::ModelProto& model, const std::string& source_name,
                                       const std::vector<std::string>& names, const std::vector<Sample>& samples,
                                       const CalibrationOptions& options) {
  ModelRuns runs(WithOutputs(model, names), source_name, /*fuse=*/false);
  std::map<std::string, Range> ranges;
  for (const auto& name : names)
    ranges[name] = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (const Sample& sample : samples) {
    const std::map<std::string, Tensor> outputs = runs.Run(sample);
    for (const auto& name : names) {
      const Tensor& t = Output(outputs, name, source_name);
      if (t.data.empty()) continue;
      const auto [low, high] = std::minmax_element(t.data.begin(), t.data.end());
      ranges[name].low = std::min(ranges[name].low, static_cast<double>(*low));
      ranges[name].high = std::max(ranges[name].high, static_cast<double>(*high));
    }
  }
  for (auto& [name, range] : ranges)
    if (range.low > range.high) range = {0, 0};  // empty on every sample
  if (options.method == CalibrationMethod::kMinMax) return ranges;

  const auto bins = static_cast<std::size_t>(options.bins);
  std::map<std::string, std::vector<double>> histograms;
  for (const auto& name : names) histograms[name].assign(bins, 0.0);
  for (const Sample& sample : samples) {
    const std::map<std::string, Tensor> outputs = runs.Run(sample);
    for (const auto& name : names) {
      const Range& r = ranges[name];
      if (!(r.high > r.low)) continue;
      std::vector<double>& h = histograms[name];
      const double width = (r.high - r.low) / static_cast<double>(bins);
      for (float x : Output(outputs, name, source_name).data) {
        const auto bin = static_cast<std::size_t>((static_cast<double>(x) - r.low) / width);
        h[std::min(bin, bins - 1)] += 1;
      }
    }
  }
  const double cut = (100.0 - options.percentile) / 200.0;  // of the values, at each end
  for (const auto& name : names) {
    Range& r = ranges[name];
    if (!(r.high > r.low)) continue;
    const std::vector<double>& h = histograms[name];
    double total = 0;
    for (double c : h) total += c;
    const double width = (r.high - r.low) / static_cast<double>(bins);
    // The left edge of the first bin at which the cumulative share reaches
    // the cut at each end (ONNX Runtime: hist_edges[searchsorted(cdf, cut)]).
    std::size_t left = 0, right = bins - 1;
    double sum = 0;
    bool left_found = false;
    for (std::size_t b = 0; b < bins; ++b) {
      sum += h[b];
      if (!left_found && sum / total >= cut) {
        left = b;
        left_found = true;
      }
      if (sum / total >= 1.0 - cut) {
        right = b;
        break;
      }
    }
    const double low = r.low;
    r.low = low + width * static_cast<double>(left);
    r.high = low + width * static_cast<double>(right);
  }
  return ranges;
}

}  // namespace onnxfuse::quantize
