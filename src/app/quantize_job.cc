#include "app/quantize_job.h"

#include <omp.h>

#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "onnxfuse/error.h"
#include "pipeline/prepare_model.h"
#include "quantize/accuracy.h"
#include "quantize/layer_error.h"
#include "quantize/model_runs.h"
#include "quantize/qdq_insertion.h"
#include "quantize/quantization_sites.h"
#include "write/onnx_writer.h"

namespace onnxfuse {

namespace {

using quantize::ActivationParams;

void CheckOptions(const QuantizeOptions& options) {
  if (options.output_path.empty()) throw Error(ErrorKind::kUsage, "quantize: no output model given (-o)");
  if (SameFile(options.model_path, options.output_path))
    throw Error(ErrorKind::kUsage, options.output_path + ": refusing to overwrite the input model; choose another -o");
  if (!options.report_path.empty() && options.report_path != "-" &&
      (SameFile(options.model_path, options.report_path) || SameFile(options.output_path, options.report_path)))
    throw Error(ErrorKind::kUsage, options.report_path + ": the report would overwrite a model; choose another --report");
  if (options.weight_bits != 7 && options.weight_bits != 8)
    throw Error(ErrorKind::kUsage, "--weight-bits must be 7 or 8");
  if (!(options.calibration.percentile > 0 && options.calibration.percentile <= 100))
    throw Error(ErrorKind::kUsage, "--percentile must be in (0, 100]");
}

nlohmann::json Report(const QuantizeOptions& options, std::size_t samples, const quantize::QuantizationSites& sites,
                      const std::vector<quantize::LayerError>& errors, const std::set<std::string>& kept_float,
                      const std::vector<quantize::OutputAccuracy>& accuracy) {
  const bool percentile = options.calibration.method == quantize::CalibrationMethod::kPercentile;
  nlohmann::json layers = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const auto& e : errors) {
    nlohmann::json layer = {{"node", e.node}, {"op_type", e.op_type}, {"relative_rms_error", e.relative_rms},
                            {"quantized", !kept_float.count(e.node)}};
    if (kept_float.count(e.node)) layer["reason"] = "relative RMS error over --max-error";
    layers.push_back(layer);
  }
  for (const auto& a : accuracy) {
    nlohmann::json o = {{"name", a.name}, {"max_abs_error", a.max_abs_error}, {"mean_abs_error", a.mean_abs_error},
                        {"max_abs_float", a.max_abs_float}};
    if (a.top1_agreement >= 0) {
      o["top1_agreement"] = a.top1_agreement;
      o["rows"] = a.rows;
    }
    outputs.push_back(o);
  }
  nlohmann::json calibration = {{"folder", options.calibration_dir}, {"samples", samples},
                                {"method", percentile ? "percentile" : "minmax"}};
  if (percentile) calibration["percentile"] = options.calibration.percentile;
  return {{"model", options.model_path},
          {"output", options.output_path},
          {"calibration", calibration},
          {"weight_bits", options.weight_bits},
          {"max_error", options.max_error >= 0 ? nlohmann::json(options.max_error) : nlohmann::json(nullptr)},
          {"quantized_layers", sites.anchors.size()},
          {"quantized_activations", sites.activations.size()},
          {"layers", layers},
          {"outputs", outputs}};
}

void PrintSummary(std::ostream& out, const QuantizeOptions& options, std::size_t samples,
                  const quantize::QuantizationSites& sites, const std::vector<quantize::LayerError>& errors,
                  const std::set<std::string>& kept_float, const std::vector<quantize::OutputAccuracy>& accuracy) {
  std::map<std::string, int> by_op;
  for (const auto& a : sites.anchors) ++by_op[a.op_type];
  std::string ops;
  for (const auto& [op, n] : by_op) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  out << "quantized " << sites.anchors.size() << " of " << errors.size() << " layers (" << ops << ") and "
      << sites.activations.size() << " activations; calibrated on " << samples << " sample"
      << (samples == 1 ? "" : "s") << " ("
      << (options.calibration.method == quantize::CalibrationMethod::kPercentile ? "percentile" : "min/max") << ")\n";
  double worst = 0;
  std::string worst_node;
  for (const auto& e : errors)
    if (!kept_float.count(e.node) && e.relative_rms >= worst) {
      worst = e.relative_rms;
      worst_node = e.node;
    }
  if (!worst_node.empty()) out << "largest layer error quantized: " << worst_node << " (relative RMS " << worst << ")\n";
  for (const auto& e : errors)
    if (kept_float.count(e.node))
      out << "kept float: " << e.node << " (" << e.op_type << "): relative RMS error " << e.relative_rms
          << " > --max-error " << options.max_error << "\n";
  out << "output  max_abs_error  mean_abs_error  max_abs_float  top1_agreement\n";
  for (const auto& a : accuracy) {
    out << a.name << "  " << a.max_abs_error << "  " << a.mean_abs_error << "  " << a.max_abs_float << "  ";
    if (a.top1_agreement >= 0)
      out << a.top1_agreement << " (" << static_cast<std::int64_t>(a.top1_agreement * static_cast<double>(a.rows) + 0.5)
          << "/" << a.rows << ")";
    else
      out << "-";
    out << "\n";
  }
  out << "wrote " << options.output_path << "\n";
}

}  // namespace

void RunQuantizeJob(const QuantizeOptions& options, std::ostream& out) {
  CheckOptions(options);
  if (options.threads > 0) omp_set_num_threads(options.threads);
  const std::vector<quantize::Sample> samples = quantize::ReadSamples(options.calibration_dir);

  PrepareOptions prepare;
  prepare.target = Target::kOnnx;
  prepare.fold_bn = true;
  prepare.fuse = false;
  const onnx::ModelProto model = PrepareModel(options.model_path, prepare).graph->model();
  const std::string& source = options.model_path;

  quantize::QuantizationSites all = quantize::FindQuantizationSites(model.graph());
  if (all.anchors.empty())
    throw Error(ErrorKind::kUnsupported, source + ": nothing to quantize (no Conv, Gemm or MatMul with constant weights)");
  const auto ranges = quantize::Calibrate(model, source, all.activations, samples, options.calibration);
  std::map<std::string, ActivationParams> params;
  for (const auto& [name, range] : ranges) params[name] = quantize::ActivationParamsFor(range.low, range.high);
  const int qmax = options.weight_bits == 8 ? 127 : 63;
  const std::vector<quantize::LayerError> errors =
      quantize::MeasureLayerErrors(model, source, all, params, qmax, samples);

  std::set<std::string> kept_float;
  if (options.max_error >= 0)
    for (const auto& e : errors)
      if (e.relative_rms > options.max_error) kept_float.insert(e.node);
  const quantize::QuantizationSites sites =
      kept_float.empty() ? all : quantize::FindQuantizationSites(model.graph(), kept_float);
  onnx::ModelProto quantized = quantize::InsertQdq(model, sites, params, qmax);
  quantized.set_producer_name("onnx-fuse quantize");
  quantized.set_producer_version(ONNXFUSE_VERSION);

  quantize::ModelRuns float_runs(model, source, /*fuse=*/true);
  quantize::ModelRuns int8_runs(quantized, options.output_path, /*fuse=*/true);
  quantize::AccuracyMeter meter;
  for (const auto& sample : samples) meter.Add(float_runs.Run(sample), int8_runs.Run(sample));
  const std::vector<quantize::OutputAccuracy> accuracy = meter.Result();

  SaveModelAtomically(quantized, options.output_path);
  const nlohmann::json report = Report(options, samples.size(), sites, errors, kept_float, accuracy);
  if (options.report_path == "-") {
    std::cout << report.dump(2) << "\n";
  } else if (!options.report_path.empty()) {
    WriteTextAtomically(options.report_path, report.dump(2) + "\n");
  }
  PrintSummary(options.report_path == "-" ? std::cerr : out, options, samples.size(), sites, errors, kept_float,
               accuracy);
}

}  // namespace onnxfuse
