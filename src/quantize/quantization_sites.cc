#include "quantize/quantization_sites.h"

#include <iterator>
#include <map>
#include <unordered_set>

namespace onnxfuse::quantize {

namespace {

const std::set<std::string> kProducts = {"Conv", "Gemm", "MatMul"};
const std::set<std::string> kQuantizedOps = {"Conv", "Gemm", "MatMul", "Add", "Concat", "MaxPool", "AveragePool",
                                             "GlobalAveragePool"};

std::int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

}  // namespace

std::string NodeName(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

QuantizationSites FindQuantizationSites(const onnx::GraphProto& graph, const std::set<std::string>& keep_float) {
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : graph.initializer()) initializers[t.name()] = &t;
  std::unordered_set<std::string> constants;
  for (const auto& t : graph.initializer()) constants.insert(t.name());
  std::map<std::string, std::vector<int>> consumers;
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& node = graph.node(n);
    if (node.op_type() == "Constant")
      for (const auto& o : node.output()) constants.insert(o);
    for (const auto& i : node.input()) consumers[i].push_back(n);
  }

  QuantizationSites sites;
  // Only float tensors are quantized (an Add of int64 shape values is not).
  std::map<std::string, int> elem_types;
  for (const auto& v : graph.input()) elem_types[v.name()] = v.type().tensor_type().elem_type();
  for (const auto& v : graph.value_info()) elem_types[v.name()] = v.type().tensor_type().elem_type();
  for (const auto& v : graph.output()) elem_types[v.name()] = v.type().tensor_type().elem_type();
  const auto is_float = [&](const std::string& name) {
    const auto t = elem_types.find(name);
    return t != elem_types.end() && t->second == onnx::TensorProto::FLOAT;
  };
  std::unordered_set<std::string> listed;
  const auto want = [&](const std::string& name) {
    if (!name.empty() && !constants.count(name) && is_float(name)) listed.insert(name);
  };
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& node = graph.node(n);
    if (!kQuantizedOps.count(node.op_type()) || !node.domain().empty() || !is_float(node.output(0))) continue;
    const bool product = kProducts.count(node.op_type()) > 0;
    const std::string name = NodeName(node, n);
    if (product && keep_float.count(name)) continue;
    std::vector<std::string> data_inputs;
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const std::string& input = node.input(slot);
      if (product && slot > 1) break;  // a bias is quantized with the weights
      if (!input.empty() && !constants.count(input)) data_inputs.push_back(input);
    }
    std::string output = node.output(0);
    const auto after = consumers.find(output);
    if (product && after != consumers.end() && after->second.size() == 1) {
      const onnx::NodeProto& next = graph.node(after->second[0]);
      if ((next.op_type() == "Relu" || next.op_type() == "Clip") && next.domain().empty()) output = next.output(0);
    }
    for (const auto& input : data_inputs) want(input);
    want(output);
    if (!product) continue;
    const auto weight = node.input_size() > 1 ? initializers.find(node.input(1)) : initializers.end();
    if (weight == initializers.end() || weight->second->dims_size() < 2) continue;
    Anchor a;
    a.node = n;
    a.name = name;
    a.op_type = node.op_type();
    a.data_inputs = data_inputs;
    a.output = node.output(0);
    if (node.op_type() == "Conv") {
      a.weight_axis = 0;
      a.bias_slot = 2;
    } else if (node.op_type() == "MatMul") {
      a.weight_axis = weight->second->dims_size() - 1;  // the output columns
    } else {  // Gemm: B is [K, N], or [N, K] with transB
      a.weight_axis = IntAttribute(node, "transB", 0) ? 0 : 1;
      a.bias_slot = 2;
    }
    sites.anchors.push_back(std::move(a));
  }
  // Only what some node reads: a graph output nothing reads stays float (as
  // ONNX Runtime's quantizer leaves a model's final scores).
  std::unordered_set<std::string> read;
  for (const auto& node : graph.node())
    for (const auto& i : node.input()) read.insert(i);
  for (auto it = listed.begin(); it != listed.end();) it = read.count(*it) ? std::next(it) : listed.erase(it);
  // Graph inputs first, then the rest in the order their producers run.
  for (const auto& input : graph.input())
    if (listed.count(input.name())) sites.activations.push_back(input.name());
  std::unordered_set<std::string> inputs(sites.activations.begin(), sites.activations.end());
  for (const auto& node : graph.node())
    for (const auto& o : node.output())
      if (listed.count(o) && !inputs.count(o)) sites.activations.push_back(o);
  return sites;
}

}  // namespace onnxfuse::quantize
