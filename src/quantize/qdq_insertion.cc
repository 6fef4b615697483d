#include "quantize/qdq_insertion.h"

#include <set>
#include <utility>
#include <vector>

#include "ir/tensor_io.h"
#include "onnxfuse/error.h"
#include "rewrite/name_source.h"

namespace onnxfuse::quantize {

namespace {

std::vector<float> FloatValues(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT)
    throw Error(ErrorKind::kInvalidModel, "initializer '" + t.name() + "' is not float32; it cannot be quantized");
  return TensorFromProto(t, "initializer '" + t.name() + "'").data;
}

template <typename T>
onnx::TensorProto Initializer(const std::string& name, onnx::TensorProto::DataType type,
                              const std::vector<std::int64_t>& dims, const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (std::int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

class QdqWriter {
 public:
  QdqWriter(const onnx::ModelProto& model, const std::map<std::string, ActivationParams>& activations)
      : names_(model), activations_(activations) {}

  // name -> QuantizeLinear -> DequantizeLinear; returns the dequantized value's name.
  std::string QuantizeActivation(const std::string& name) {
    const ActivationParams& p = activations_.at(name);
    const std::string scale = Add(Initializer<float>(names_.Fresh(name + "_scale"), onnx::TensorProto::FLOAT, {}, {p.scale}));
    const std::string zero = Add(Initializer<std::uint8_t>(names_.Fresh(name + "_zero_point"), onnx::TensorProto::UINT8,
                                                           {}, {p.zero_point}));
    const std::string quantized = names_.Fresh(name + "_quantized");
    const std::string dequantized = names_.Fresh(name + "_dequantized");
    Node("QuantizeLinear", {name, scale, zero}, quantized, name + "_QuantizeLinear", -1);
    Node("DequantizeLinear", {quantized, scale, zero}, dequantized, name + "_DequantizeLinear", -1);
    return dequantized;
  }

  // Integer `values` of `dims` at per-channel `scales` along `axis`, through a DequantizeLinear.
  template <typename T>
  std::string DequantizedConstant(const std::string& base, onnx::TensorProto::DataType type,
                                  const std::vector<std::int64_t>& dims, const std::vector<T>& values,
                                  const std::vector<float>& scales, int axis) {
    const auto channels = static_cast<std::int64_t>(scales.size());
    const std::string q = Add(Initializer<T>(names_.Fresh(base + "_quantized"), type, dims, values));
    const std::string scale = Add(Initializer<float>(names_.Fresh(base + "_scale"), onnx::TensorProto::FLOAT, {channels}, scales));
    const std::string zero =
        Add(Initializer<T>(names_.Fresh(base + "_zero_point"), type, {channels}, std::vector<T>(scales.size(), T{0})));
    const std::string dequantized = names_.Fresh(base + "_dequantized");
    Node("DequantizeLinear", {q, scale, zero}, dequantized, base + "_DequantizeLinear", axis);
    return dequantized;
  }

  std::vector<onnx::NodeProto>& nodes() { return nodes_; }
  std::vector<onnx::TensorProto>& initializers() { return initializers_; }

 private:
  std::string Add(onnx::TensorProto t) {
    initializers_.push_back(std::move(t));
    return initializers_.back().name();
  }
  void Node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
            const std::string& name, int axis) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(names_.Fresh(name));
    for (const auto& i : inputs) node.add_input(i);
    node.add_output(output);
    if (axis >= 0) {
      auto* a = node.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(axis);
    }
    nodes_.push_back(std::move(node));
  }

  NameSource names_;
  const std::map<std::string, ActivationParams>& activations_;
  std::vector<onnx::NodeProto> nodes_;
  std::vector<onnx::TensorProto> initializers_;
};

}  // namespace

onnx::ModelProto InsertQdq(const onnx::ModelProto& model, const QuantizationSites& sites,
                           const std::map<std::string, ActivationParams>& activations, int weight_qmax) {
  const onnx::GraphProto& graph = model.graph();
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : graph.initializer()) initializers[t.name()] = &t;
  std::map<int, const Anchor*> anchors;
  for (const Anchor& a : sites.anchors) anchors[a.node] = &a;
  std::set<std::string> read;
  for (const auto& node : graph.node())
    for (const auto& i : node.input()) read.insert(i);

  QdqWriter writer(model, activations);
  std::map<std::string, std::string> dequantized;  // activation -> its dequantized value
  const auto quantize_after = [&](const std::string& name) {
    if (activations.count(name) && read.count(name) && !dequantized.count(name))
      dequantized[name] = writer.QuantizeActivation(name);
  };
  for (const auto& input : graph.input()) quantize_after(input.name());
  for (int n = 0; n < graph.node_size(); ++n) {
    onnx::NodeProto node = graph.node(n);
    for (auto& name : *node.mutable_input())
      if (const auto d = dequantized.find(name); d != dequantized.end()) name = d->second;
    if (const auto a = anchors.find(n); a != anchors.end()) {
      const Anchor& anchor = *a->second;
      const onnx::TensorProto& w = *initializers.at(node.input(1));
      const std::vector<std::int64_t> dims(w.dims().begin(), w.dims().end());
      const QuantizedWeights qw = QuantizeWeights(FloatValues(w), dims, anchor.weight_axis, weight_qmax);
      *node.mutable_input(1) = writer.DequantizedConstant<std::int8_t>(w.name(), onnx::TensorProto::INT8, dims,
                                                                       qw.values, qw.scales, anchor.weight_axis);
      const std::string& x = graph.node(n).input(0);
      const bool has_bias = anchor.bias_slot >= 0 && node.input_size() > anchor.bias_slot &&
                            initializers.count(node.input(anchor.bias_slot));
      if (has_bias && activations.count(x) && dequantized.count(x)) {
        const onnx::TensorProto& b = *initializers.at(node.input(anchor.bias_slot));
        const std::vector<float> bias = FloatValues(b);
        if (b.dims_size() == 1 && bias.size() == qw.scales.size()) {
          const QuantizedBias qb = QuantizeBias(bias, activations.at(x).scale, qw.scales);
          *node.mutable_input(anchor.bias_slot) = writer.DequantizedConstant<std::int32_t>(
              b.name(), onnx::TensorProto::INT32, {b.dims(0)}, qb.values, qb.scales, 0);
        }
      }
    }
    writer.nodes().push_back(std::move(node));
    for (const auto& o : graph.node(n).output()) quantize_after(o);
  }

  onnx::ModelProto out = model;
  onnx::GraphProto& g = *out.mutable_graph();
  g.clear_node();
  for (auto& node : writer.nodes()) *g.add_node() = std::move(node);
  std::set<std::string> used;
  for (const auto& node : g.node())
    for (const auto& i : node.input()) used.insert(i);
  g.clear_initializer();
  for (const auto& t : graph.initializer())
    if (used.count(t.name())) *g.add_initializer() = t;
  for (auto& t : writer.initializers()) *g.add_initializer() = std::move(t);
  // Initializers listed as inputs (IR 3) that are gone.
  auto* inputs = g.mutable_input();
  std::set<std::string> kept;
  for (const auto& t : g.initializer()) kept.insert(t.name());
  for (int i = inputs->size() - 1; i >= 0; --i)
    if (initializers.count(inputs->Get(i).name()) && !kept.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
  return out;
}

}  // namespace onnxfuse::quantize
