#include "rewrite/qoperator_as_qdq.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"
#include "rewrite/contrib_qoperators.h"
#include "rewrite/qdq_writer.h"

namespace onnxfuse {

namespace {

// QLinearConv's QDQ form, or a reason it stays.
std::string QLinearConvAsQdq(const Graph& graph, const onnx::NodeProto& node, QdqWriter& w) {
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
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() != "channels_last") *w.Last().add_attribute() = a;  // com.microsoft's: 0 here
  w.Node("QuantizeLinear", base, {y, node.input(6), node.input(7)}, node.output(0));
  return "";
}

// QLinearMatMul's QDQ form, or a reason it stays.
std::string QLinearMatMulAsQdq(const Graph& graph, const onnx::NodeProto& node, QdqWriter& w) {
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

// QLinearConv of the default domain, or com.microsoft's in NCHW (the same op).
bool IsQLinearConv(const Node& node) {
  if (node.op_type != "QLinearConv") return false;
  if (node.domain.empty()) return true;
  return node.domain == "com.microsoft" && AttrInt(node, "channels_last", 0) == 0;
}

}  // namespace

QOperatorRewrite ExpressQOperatorsAsQdq(Graph& graph) {
  QOperatorRewrite result;
  if (graph.opset() < 13) return result;
  bool any = false;
  for (const Node& node : graph.nodes())
    any |= IsQLinearConv(node) || (node.domain.empty() && node.op_type == "QLinearMatMul") || IsContribQOperator(node);
  if (!any) return result;
  onnx::ModelProto model = graph.model();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  QdqWriter writer(model, nodes);
  ElementTypes types;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    const onnx::NodeProto& proto = model.graph().node(static_cast<int>(id));
    std::string why;
    if (IsQLinearConv(node)) why = QLinearConvAsQdq(graph, proto, writer);
    else if (node.domain.empty() && node.op_type == "QLinearMatMul") why = QLinearMatMulAsQdq(graph, proto, writer);
    else if (IsContribQOperator(node)) why = ContribQOperatorAsQdq(graph, proto, writer, types);
    else {
      *nodes.Add() = proto;
      continue;
    }
    if (why.empty()) {
      result.rewritten.push_back(node.name);
    } else if (!node.domain.empty()) {
      // Only its QDQ form runs: the host evaluator knows the default domain's QOperators alone.
      throw Error(ErrorKind::kUnsupported, NodeInFile(graph, node) + ": " + node.domain + "." + node.op_type +
                                               " runs as its QDQ form, which needs what it lacks: " + why);
    } else {
      *nodes.Add() = proto;
      result.kept.emplace_back(node.name, why);
      spdlog::debug("{}: {} stays on the host evaluator: {}", node.name, node.op_type, why);
    }
  }
  if (result.rewritten.empty()) return result;
  ReloadWithNodes(graph, std::move(model), nodes);
  return result;
}

}  // namespace onnxfuse
