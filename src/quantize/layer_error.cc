#include "quantize/layer_error.h"

#include <cmath>
#include <utility>

#include "quantize/calibration.h"
#include "quantize/qdq_insertion.h"
#include "rewrite/name_source.h"

namespace onnxfuse::quantize {

std::vector<LayerError> MeasureLayerErrors(const onnx::ModelProto& model, const std::string& source_name,
                                           const QuantizationSites& sites,
                                           const std::map<std::string, ActivationParams>& params, int weight_qmax,
                                           const std::vector<Sample>& samples) {
  // The probe: every node as it is, and after the last one each anchor's
  // twin reading Identity copies of its data inputs, which are quantized in
  // place of the originals (so the float nodes keep reading float values).
  onnx::ModelProto probe = model;
  onnx::GraphProto& graph = *probe.mutable_graph();
  NameSource names(model);
  QuantizationSites twins;
  std::map<std::string, ActivationParams> twin_params;
  std::vector<std::pair<std::string, std::string>> compared;  // (float output, twin output)
  for (const Anchor& anchor : sites.anchors) {
    onnx::NodeProto twin = model.graph().node(anchor.node);
    twin.set_name(names.Fresh(anchor.name + "_int8_twin"));
    Anchor a = anchor;
    a.data_inputs.clear();
    for (auto& input : *twin.mutable_input()) {
      const auto p = params.find(input);
      if (input.empty() || p == params.end()) continue;
      onnx::NodeProto& copy = *graph.add_node();
      copy.set_op_type("Identity");
      copy.set_name(names.Fresh(input + "_twin_copy"));
      copy.add_input(input);
      const std::string copied = names.Fresh(input + "_twin_copy");
      copy.add_output(copied);
      twin_params[copied] = p->second;
      twins.activations.push_back(copied);
      a.data_inputs.push_back(copied);
      input = copied;
    }
    const std::string out = names.Fresh(anchor.output + "_int8_twin");
    *twin.mutable_output(0) = out;
    for (int k = 1; k < twin.output_size(); ++k) *twin.mutable_output(k) = "";
    a.node = graph.node_size();
    a.name = twin.name();
    a.output = out;
    *graph.add_node() = std::move(twin);
    twins.anchors.push_back(std::move(a));
    compared.emplace_back(anchor.output, out);
  }
  std::vector<std::string> read;
  for (const auto& [original, twin] : compared) {
    read.push_back(original);
    read.push_back(twin);
  }
  ModelRuns runs(WithOutputs(InsertQdq(probe, twins, twin_params, weight_qmax), read), source_name, /*fuse=*/false);

  std::vector<double> difference(compared.size(), 0.0), reference(compared.size(), 0.0);
  for (const Sample& sample : samples) {
    const std::map<std::string, Tensor> outputs = runs.Run(sample);
    for (std::size_t k = 0; k < compared.size(); ++k) {
      const std::vector<float>& y = outputs.at(compared[k].first).data;
      const std::vector<float>& q = outputs.at(compared[k].second).data;
      for (std::size_t i = 0; i < y.size() && i < q.size(); ++i) {
        const double d = static_cast<double>(q[i]) - static_cast<double>(y[i]);
        difference[k] += d * d;
        reference[k] += static_cast<double>(y[i]) * static_cast<double>(y[i]);
      }
    }
  }
  std::vector<LayerError> errors;
  for (std::size_t k = 0; k < compared.size(); ++k) {
    const Anchor& anchor = sites.anchors[k];
    const double rms = reference[k] > 0 ? std::sqrt(difference[k] / reference[k]) : (difference[k] > 0 ? 1.0 : 0.0);
    errors.push_back({anchor.name, anchor.op_type, rms});
  }
  return errors;
}

}  // namespace onnxfuse::quantize
