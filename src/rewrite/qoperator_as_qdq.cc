#include "rewrite/qoperator_as_qdq.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "ir/tensor_io.h"
#include "load/loader.h"
#include "rewrite/name_source.h"

namespace onnxfuse {

namespace {

// The float32 values of constant `name` (an initializer or a Constant node's
// output), or nullopt.
std::optional<std::vector<float>> FloatConstant(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  if (!v || !graph.IsConstant(*v)) return std::nullopt;
  const onnx::TensorProto* proto = graph.ConstantTensor(*v);
  if (!proto || proto->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  return TensorFromProto(*proto, name).data;
}

bool IsConstantValue(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  return v && graph.IsConstant(*v);
}

std::size_t RankOf(const Graph& graph, const std::string& name) {
  const std::optional<ValueId> v = graph.FindValue(name);
  return v && graph.value(*v).type.has_shape ? graph.value(*v).type.dims.size() : 0;
}

class Writer {
 public:
  Writer(onnx::ModelProto& model, google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes)
      : model_(model), nodes_(nodes), fresh_(model) {}

  std::string Node(const std::string& op, const std::string& base, const std::vector<std::string>& inputs,
                   const std::string& output = "", std::optional<std::int64_t> axis = std::nullopt) {
    onnx::NodeProto& n = *nodes_.Add();
    n.set_op_type(op);
    n.set_name(fresh_.Fresh(base + "_" + op));
    for (const std::string& in : inputs) n.add_input(in);
    const std::string out = output.empty() ? fresh_.Fresh(base) : output;
    n.add_output(out);
    if (axis) {
      onnx::AttributeProto& a = *n.add_attribute();
      a.set_name("axis");
      a.set_type(onnx::AttributeProto::INT);
      a.set_i(*axis);
    }
    return out;
  }

  onnx::NodeProto& Last() { return *nodes_.Mutable(nodes_.size() - 1); }

  std::string Initializer(const std::string& base, onnx::TensorProto tensor) {
    tensor.set_name(fresh_.Fresh(base));
    *model_.mutable_graph()->add_initializer() = tensor;
    return tensor.name();
  }

 private:
  onnx::ModelProto& model_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes_;
  NameSource fresh_;
};

// QLinearConv's QDQ form, or a reason it stays.
std::string QLinearConvAsQdq(const Graph& graph, const onnx::NodeProto& node, Writer& w) {
  const auto x_scale = FloatConstant(graph, node.input(1));
  const auto w_scale = FloatConstant(graph, node.input(4));
  if (!x_scale || !w_scale || x_scale->size() != 1) return "x_scale or w_scale is not a constant";
  const bool bias = node.input_size() > 8 && !node.input(8).empty();
  if (bias && !IsConstantValue(graph, node.input(8))) return "B is not a constant";
  const std::string base = node.name();
  const std::string x = w.Node("DequantizeLinear", base + "_x", {node.input(0), node.input(1), node.input(2)});
  const std::string weights =
      w.Node("DequantizeLinear", base + "_w", {node.input(3), node.input(4), node.input(5)}, "", std::int64_t{0});
  std::vector<std::string> conv_inputs = {x, weights};
  if (bias) {
    // B's scale is xs * ws per output channel, its zero point 0 (QLinearConv-10).
    onnx::TensorProto scale, zero;
    scale.set_data_type(onnx::TensorProto::FLOAT);
    scale.add_dims(static_cast<std::int64_t>(w_scale->size()));
    for (float s : *w_scale) scale.add_float_data((*x_scale)[0] * s);
    zero.set_data_type(onnx::TensorProto::INT32);
    zero.add_dims(static_cast<std::int64_t>(w_scale->size()));
    for (std::size_t i = 0; i < w_scale->size(); ++i) zero.add_int32_data(0);
    const std::string b_scale = w.Initializer(base + "_bias_scale", scale);
    const std::string b_zero = w.Initializer(base + "_bias_zero_point", zero);
    conv_inputs.push_back(w.Node("DequantizeLinear", base + "_bias", {node.input(8), b_scale, b_zero}, "", std::int64_t{0}));
  }
  const std::string y = w.Node("Conv", base + "_float", conv_inputs);
  *w.Last().mutable_attribute() = node.attribute();
  w.Node("QuantizeLinear", base, {y, node.input(6), node.input(7)}, node.output(0));
  return "";
}

// QLinearMatMul's QDQ form, or a reason it stays.
std::string QLinearMatMulAsQdq(const Graph& graph, const onnx::NodeProto& node, Writer& w) {
  for (int i : {1, 6}) {  // a_scale, y_scale: per tensor (a per-row scale has no DequantizeLinear axis here)
    const auto scale = FloatConstant(graph, node.input(i));
    if (!scale || scale->size() != 1) return "a's or y's parameters are not one constant scale";
  }
  const auto b_scale = FloatConstant(graph, node.input(4));
  if (!b_scale) return "b_scale is not a constant";
  const std::size_t b_rank = RankOf(graph, node.input(3));
  if (b_scale->size() != 1 && b_rank < 2) return "b's rank is unknown";
  const std::string base = node.name();
  const std::string a = w.Node("DequantizeLinear", base + "_a", {node.input(0), node.input(1), node.input(2)});
  std::optional<std::int64_t> b_axis;
  if (b_scale->size() != 1) b_axis = static_cast<std::int64_t>(b_rank) - 1;  // per column
  const std::string b = w.Node("DequantizeLinear", base + "_b", {node.input(3), node.input(4), node.input(5)}, "", b_axis);
  const std::string y = w.Node("MatMul", base + "_float", {a, b});
  w.Node("QuantizeLinear", base, {y, node.input(6), node.input(7)}, node.output(0));
  return "";
}

}  // namespace

QOperatorRewrite ExpressQOperatorsAsQdq(Graph& graph) {
  QOperatorRewrite result;
  if (graph.opset() < 13) return result;
  bool any = false;
  for (const Node& node : graph.nodes()) any |= node.domain.empty() && (node.op_type == "QLinearConv" || node.op_type == "QLinearMatMul");
  if (!any) return result;
  onnx::ModelProto model = graph.model();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  Writer writer(model, nodes);
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    const onnx::NodeProto& proto = model.graph().node(static_cast<int>(id));
    std::string why = "not a QOperator op";
    if (node.domain.empty() && node.op_type == "QLinearConv") why = QLinearConvAsQdq(graph, proto, writer);
    else if (node.domain.empty() && node.op_type == "QLinearMatMul") why = QLinearMatMulAsQdq(graph, proto, writer);
    else {
      *nodes.Add() = proto;
      continue;
    }
    if (why.empty()) {
      result.rewritten.push_back(node.name);
    } else {
      *nodes.Add() = proto;
      result.kept.emplace_back(node.name, why);
      spdlog::debug("{}: {} stays on the host evaluator: {}", node.name, node.op_type, why);
    }
  }
  if (result.rewritten.empty()) return result;
  model.mutable_graph()->mutable_node()->Swap(&nodes);
  Graph rewritten = LoadModelProto(std::move(model), graph.source_path());
  rewritten.set_conversion(graph.conversion());
  graph = std::move(rewritten);
  return result;
}

}  // namespace onnxfuse
