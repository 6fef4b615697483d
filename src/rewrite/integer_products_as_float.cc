#include "rewrite/integer_products_as_float.h"

#include <map>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "rewrite/qdq_writer.h"

namespace onnxfuse {

namespace {

// The element count of `name` when its shape is known, else -1; 1 for an omitted input.
std::int64_t ElementsOf(const Graph& graph, const std::string& name) {
  if (name.empty()) return 1;
  const std::optional<ValueId> v = graph.FindValue(name);
  if (!v) return -1;
  if (graph.IsConstant(*v)) {
    std::int64_t n = 1;
    for (std::int64_t d : graph.ConstantTensor(*v)->dims()) n *= d;
    return n;
  }
  return graph.value(*v).type.NumElements().value_or(-1);
}

// The Cast to float that alone reads `v` (not a graph output), or nullptr.
const Node* FloatCastReader(const Graph& graph, ValueId v) {
  bool others = false;
  const std::vector<NodeId> casts = FloatCastReaders(graph, v, others);
  return casts.size() == 1 && !others ? &graph.node(casts[0]) : nullptr;
}

// Constant integer `w` minus its zero point `zero` (omitted, one value, or one
// per index of w's `axis`) as a float tensor; nullopt when either is not a
// constant integer tensor of such a shape.
std::optional<onnx::TensorProto> ShiftedConstant(const Graph& graph, const std::string& w, const std::string& zero,
                                                 std::size_t axis) {
  const std::optional<ValueId> wv = graph.FindValue(w);
  if (!wv || !graph.IsConstant(*wv)) return std::nullopt;
  const Tensor values = TensorFromProto(*graph.ConstantTensor(*wv), w);
  if (StorageTypeOf(values.DataType()) != onnx::TensorProto::INT64 || axis >= values.dims.size()) return std::nullopt;
  std::vector<std::int64_t> zeros = {0};
  if (!zero.empty()) {
    const std::optional<ValueId> zv = graph.FindValue(zero);
    if (!zv || !graph.IsConstant(*zv)) return std::nullopt;
    zeros = TensorFromProto(*graph.ConstantTensor(*zv), zero).int_data;
  }
  const std::int64_t along = values.dims[axis];
  if (zeros.size() != 1 && static_cast<std::int64_t>(zeros.size()) != along) return std::nullopt;
  std::int64_t stride = 1;
  for (std::size_t d = axis + 1; d < values.dims.size(); ++d) stride *= values.dims[d];
  onnx::TensorProto out;
  out.set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : values.dims) out.add_dims(d);
  for (std::size_t i = 0; i < values.int_data.size(); ++i) {
    const std::size_t k = zeros.size() == 1 ? 0 : static_cast<std::size_t>(static_cast<std::int64_t>(i) / stride % along);
    out.add_float_data(static_cast<float>(values.int_data[i] - zeros[k]));
  }
  return out;
}

// Cast (x) - Cast (zero), or Cast (x) when zero is omitted: run-time values.
std::string ShiftedActivation(QdqWriter& w, const std::string& x, const std::string& zero, const std::string& base) {
  auto cast = [&](const std::string& v, const std::string& name) {
    const std::string out = w.Node("Cast", name, {v});
    *w.Last().add_attribute() = IntAttribute("to", onnx::TensorProto::FLOAT);
    return out;
  };
  const std::string shifted = cast(x, base + "_float");
  if (zero.empty()) return shifted;
  return w.Node("Sub", base + "_shifted", {shifted, cast(zero, base + "_zero_point_float")});
}

// The float operand of a MatMulInteger's b or a ConvInteger's w (slot 1, its
// zero point slot 3): a constant shifted here, else shifted at run time (its
// zero point then one value, or per column of a MatMul's b, which broadcasts).
std::optional<std::string> ShiftedWeight(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& w,
                                         std::size_t axis, bool per_axis_broadcasts) {
  const std::string weight = OptionalInput(proto, 1), zero = OptionalInput(proto, 3);
  if (auto shifted = ShiftedConstant(graph, weight, zero, axis))
    return w.Initializer(proto.name() + "_weight_float", *shifted);
  const std::int64_t zeros = ElementsOf(graph, zero);
  if (zeros != 1 && !per_axis_broadcasts) return std::nullopt;
  if (zeros < 1) return std::nullopt;
  return ShiftedActivation(w, weight, zero, proto.name() + "_weight");
}

// Writes the float form of `proto` giving `output`; false (nothing written) when its
// zero points do not allow it.
bool WriteFloatForm(const Graph& graph, const onnx::NodeProto& proto, const std::string& output, QdqWriter& w) {
  if (ElementsOf(graph, OptionalInput(proto, 2)) != 1) return false;  // a's or x's zero point: one value
  const bool matmul = proto.op_type() == "MatMulInteger";
  const std::optional<ValueId> weight = graph.FindValue(OptionalInput(proto, 1));
  if (!weight || !graph.value(*weight).type.has_shape || graph.value(*weight).type.dims.empty()) return false;
  const std::size_t rank = graph.value(*weight).type.dims.size();
  // b's zero point per column (its last axis), w's per output channel (axis 0).
  const std::size_t axis = matmul ? rank - 1 : 0;
  const std::optional<std::string> b = ShiftedWeight(graph, proto, w, axis, matmul && rank >= 1);
  if (!b) return false;
  const std::string a = ShiftedActivation(w, OptionalInput(proto, 0), OptionalInput(proto, 2), proto.name() + "_input");
  w.Node(matmul ? "MatMul" : "Conv", proto.name(), {a, *b}, output);
  if (!matmul) *w.Last().mutable_attribute() = proto.attribute();
  return true;
}

}  // namespace

IntegerProductsRewrite ExpressIntegerProductsAsFloat(Graph& graph) {
  IntegerProductsRewrite result;
  std::map<NodeId, NodeId> cast_of;  // product -> the Cast that alone reads it
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() || (node.op_type != "MatMulInteger" && node.op_type != "ConvInteger")) continue;
    if (const Node* cast = FloatCastReader(graph, node.outputs[0]))
      cast_of[id] = graph.value(cast->outputs[0]).producer;
  }
  if (cast_of.empty()) return result;
  onnx::ModelProto model = graph.model();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  QdqWriter writer(model, nodes);
  std::set<NodeId> skipped;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const onnx::NodeProto& proto = model.graph().node(static_cast<int>(id));
    if (skipped.count(id)) continue;
    const auto it = cast_of.find(id);
    if (it != cast_of.end()) {
      // WriteFloatForm writes nothing when it returns false.
      const std::string output = graph.value(graph.node(it->second).outputs[0]).name;
      if (WriteFloatForm(graph, proto, output, writer)) {
        result.rewritten.push_back(proto.name());
        skipped.insert(it->second);
        continue;
      }
      spdlog::debug("{}: {} stays on the host evaluator: a zero point is neither one value nor one per column "
                    "or output channel", proto.name(), proto.op_type());
    }
    *nodes.Add() = proto;
  }
  if (result.rewritten.empty()) return result;
  ReloadWithNodes(graph, std::move(model), nodes);
  return result;
}

}  // namespace onnxfuse
