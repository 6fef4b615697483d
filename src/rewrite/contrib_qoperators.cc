#include "rewrite/contrib_qoperators.h"

#include <set>
#include <vector>

#include "ir/tensor_io.h"

namespace onnxfuse {

namespace {

// A quantized operand: the slots of its tensor, scale and zero point (absent: -1 or an empty name).
struct Operand {
  int x, scale, zero;
};

// An op whose operands are dequantized, given to `float_op`, and the result quantized.
struct Form {
  const char* float_op;
  std::vector<Operand> operands;
  int y_scale, y_zero;
};

const std::map<std::string, Form>& Forms() {
  static const std::map<std::string, Form> forms = {
      {"QLinearAdd", {"Add", {{0, 1, 2}, {3, 4, 5}}, 6, 7}},
      {"QLinearMul", {"Mul", {{0, 1, 2}, {3, 4, 5}}, 6, 7}},
      {"QLinearSigmoid", {"Sigmoid", {{0, 1, 2}}, 3, 4}},
      {"QLinearLeakyRelu", {"LeakyRelu", {{0, 1, 2}}, 3, 4}},
      {"QLinearGlobalAveragePool", {"GlobalAveragePool", {{0, 1, 2}}, 3, 4}},
      {"QLinearAveragePool", {"AveragePool", {{0, 1, 2}}, 3, 4}},
  };
  return forms;
}

std::int32_t ElementType(const Graph& graph, const ElementTypes& types, const std::string& name) {
  if (auto it = types.find(name); it != types.end()) return it->second;
  const std::optional<ValueId> v = graph.FindValue(name);
  return v ? graph.value(*v).type.elem_type : 0;
}

bool IsEightBit(std::int32_t type) {
  return type == onnx::TensorProto::UINT8 || type == onnx::TensorProto::INT8;
}

// A scale must be one number: the ops above quantize per tensor (QGemm's b aside).
std::string PerTensorScale(const Graph& graph, const std::string& name, const char* what) {
  const auto scale = FloatConstant(graph, name);
  if (!scale) return std::string(what) + " is not a constant";
  if (scale->size() != 1) return std::string(what) + " is not one number";
  return "";
}

// The attributes carried to the float op: all but channels_last, which must be 0.
std::string CarryAttributes(const onnx::NodeProto& proto, onnx::NodeProto& to) {
  for (const onnx::AttributeProto& a : proto.attribute()) {
    if (a.name() == "channels_last") {
      if (a.i() != 0) return "channels_last (NHWC) is not rewritten";
      continue;
    }
    *to.add_attribute() = a;
  }
  return "";
}

std::string Dequantize(QdqWriter& w, const onnx::NodeProto& proto, const Operand& q, const std::string& base) {
  std::vector<std::string> inputs = {OptionalInput(proto, q.x), OptionalInput(proto, q.scale)};
  if (!OptionalInput(proto, q.zero).empty()) inputs.push_back(OptionalInput(proto, q.zero));
  return w.Node("DequantizeLinear", base, inputs);
}

// QuantizeLinear of `y` into proto's output; an absent zero point is 0 of `type`
// (QuantizeLinear without one would give uint8).
void Quantize(QdqWriter& w, const onnx::NodeProto& proto, const std::string& y, int scale, int zero,
              std::int32_t type) {
  std::string zero_point = OptionalInput(proto, zero);
  if (zero_point.empty()) {
    onnx::TensorProto z;
    z.set_data_type(type);
    z.add_int32_data(0);
    zero_point = w.Initializer(proto.name() + "_zero_point", z);
  }
  w.Node("QuantizeLinear", proto.name(), {y, OptionalInput(proto, scale), zero_point}, proto.output(0));
}

std::string FormAsQdq(const Graph& graph, const onnx::NodeProto& proto, const Form& form, QdqWriter& w,
                      ElementTypes& types) {
  for (const Operand& q : form.operands)
    if (std::string why = PerTensorScale(graph, OptionalInput(proto, q.scale), "an input's scale"); !why.empty()) return why;
  if (std::string why = PerTensorScale(graph, OptionalInput(proto, form.y_scale), "the output's scale"); !why.empty())
    return why;
  const std::int32_t type = ElementType(graph, types, OptionalInput(proto, form.operands[0].x));
  if (!IsEightBit(type)) return "its input's element type is not known to be uint8 or int8";
  onnx::NodeProto attributes;
  if (std::string why = CarryAttributes(proto, attributes); !why.empty()) return why;
  std::vector<std::string> floats;
  for (std::size_t i = 0; i < form.operands.size(); ++i)
    floats.push_back(Dequantize(w, proto, form.operands[i], proto.name() + "_" + std::to_string(i)));
  const std::string y = w.Node(form.float_op, proto.name() + "_float", floats);
  *w.Last().mutable_attribute() = attributes.attribute();
  Quantize(w, proto, y, form.y_scale, form.y_zero, type);
  types[proto.output(0)] = type;
  return "";
}

// QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input; axis).
std::string ConcatAsQdq(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& w, ElementTypes& types) {
  if (proto.input_size() < 5 || (proto.input_size() - 2) % 3 != 0)
    return "its inputs are not Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples";
  if (std::string why = PerTensorScale(graph, proto.input(0), "Y_scale"); !why.empty()) return why;
  for (int i = 2; i < proto.input_size(); i += 3)
    if (std::string why = PerTensorScale(graph, proto.input(i + 1), "an input's scale"); !why.empty()) return why;
  const std::int32_t type = ElementType(graph, types, proto.input(1));
  if (!IsEightBit(type)) return "Y_zero_point's element type is not known to be uint8 or int8";
  std::vector<std::string> floats;
  for (int i = 2; i < proto.input_size(); i += 3)
    floats.push_back(Dequantize(w, proto, {i, i + 1, i + 2}, proto.name() + "_" + std::to_string(i / 3)));
  const std::string y = w.Node("Concat", proto.name() + "_float", floats);
  *w.Last().mutable_attribute() = proto.attribute();
  Quantize(w, proto, y, 0, 1, type);
  types[proto.output(0)] = type;
  return "";
}

// C of QGemm as float: C * alpha * a_scale * b_scale (per column when b is), broadcast
// along the columns where C has one; C's scale is alpha * a_scale * b_scale, its zero point 0.
std::string GemmBiasAsFloat(const Graph& graph, const std::string& c, float factor, const std::vector<float>& b_scale,
                            onnx::TensorProto& out) {
  const std::optional<ValueId> v = graph.FindValue(c);
  const onnx::TensorProto* proto = v && graph.IsConstant(*v) ? graph.ConstantTensor(*v) : nullptr;
  if (!proto || proto->data_type() != onnx::TensorProto::INT32) return "C is not a constant int32 tensor";
  const Tensor bias = TensorFromProto(*proto, c);
  std::vector<std::int64_t> dims(proto->dims().begin(), proto->dims().end());
  const std::size_t n = b_scale.size();
  const std::size_t last = dims.empty() ? 1 : static_cast<std::size_t>(dims.back());
  if (n > 1 && last != n && last != 1) return "C's last dim is neither 1 nor b_scale's length";
  const std::size_t columns = n > 1 ? n : last;
  if (n > 1 && last == 1) {
    if (dims.empty()) dims.push_back(1);
    dims.back() = static_cast<std::int64_t>(n);
  }
  out.set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) out.add_dims(d);
  const std::size_t rows = bias.int_data.size() / last;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < columns; ++j) {
      const double value = static_cast<double>(bias.int_data[r * last + (last == 1 ? 0 : j)]);
      out.add_float_data(static_cast<float>(value * factor * b_scale[n > 1 ? j : 0]));
    }
  return "";
}

// QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point[, C[, y_scale, y_zero_point]]).
std::string GemmAsQdq(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& w, ElementTypes& types) {
  const auto a_scale = FloatConstant(graph, OptionalInput(proto, 1));
  const auto b_scale = FloatConstant(graph, OptionalInput(proto, 4));
  if (!a_scale || a_scale->size() != 1) return "a_scale is not one constant number";
  if (!b_scale) return "b_scale is not a constant";
  const std::string c = OptionalInput(proto, 6), y_scale = OptionalInput(proto, 7), y_zero = OptionalInput(proto, 8);
  if (!y_scale.empty() && y_zero.empty()) return "y_scale is given without y_zero_point";
  if (!y_scale.empty())
    if (std::string why = PerTensorScale(graph, y_scale, "y_scale"); !why.empty()) return why;
  float alpha = 1.0f;
  bool trans_b = false;
  for (const onnx::AttributeProto& a : proto.attribute()) {
    if (a.name() == "alpha") alpha = a.f();
    if (a.name() == "transB") trans_b = a.i() != 0;
  }
  onnx::TensorProto bias;
  if (!c.empty())
    if (std::string why = GemmBiasAsFloat(graph, c, alpha * (*a_scale)[0], *b_scale, bias); !why.empty()) return why;

  const std::string base = proto.name();
  const std::string a = Dequantize(w, proto, {0, 1, 2}, base + "_a");
  std::optional<std::int64_t> b_axis;
  if (b_scale->size() != 1) b_axis = trans_b ? 0 : 1;  // per column: B is (N, K) with transB, else (K, N)
  std::vector<std::string> b_inputs = {OptionalInput(proto, 3), OptionalInput(proto, 4)};
  if (!OptionalInput(proto, 5).empty()) b_inputs.push_back(OptionalInput(proto, 5));
  std::vector<std::string> inputs = {a, w.Node("DequantizeLinear", base + "_b", b_inputs, "", b_axis)};
  if (!c.empty()) inputs.push_back(w.Initializer(base + "_C", bias));
  const std::string y = w.Node("Gemm", y_scale.empty() ? base : base + "_float", inputs,
                               y_scale.empty() ? proto.output(0) : "");
  *w.Last().mutable_attribute() = proto.attribute();  // alpha, transA, transB; beta 1
  if (!y_scale.empty()) {
    const std::int32_t type = ElementType(graph, types, y_zero);
    w.Node("QuantizeLinear", base, {y, y_scale, y_zero}, proto.output(0));
    types[proto.output(0)] = type;
  } else {
    types[proto.output(0)] = onnx::TensorProto::FLOAT;
  }
  return "";
}

// com.microsoft QuantizeLinear and DequantizeLinear: the default domain's, 8-bit.
std::string QdqOpAsDefault(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& w, ElementTypes& types) {
  const bool quantize = proto.op_type() == "QuantizeLinear";
  const std::int32_t type = ElementType(graph, types, quantize ? OptionalInput(proto, 2) : OptionalInput(proto, 0));
  if (!IsEightBit(type)) return "its quantized type is not known to be uint8 or int8 (the default domain's at opset 17)";
  std::vector<std::string> inputs(proto.input().begin(), proto.input().end());
  w.Node(proto.op_type(), proto.name(), inputs, proto.output(0));
  *w.Last().mutable_attribute() = proto.attribute();
  types[proto.output(0)] = quantize ? type : onnx::TensorProto::FLOAT;
  return "";
}

}  // namespace

bool IsContribQOperator(const Node& node) {
  static const std::set<std::string> others = {"QLinearConcat", "QGemm", "QuantizeLinear", "DequantizeLinear"};
  return node.domain == "com.microsoft" && (Forms().count(node.op_type) || others.count(node.op_type));
}

std::string ContribQOperatorAsQdq(const Graph& graph, const onnx::NodeProto& proto, QdqWriter& writer,
                                  ElementTypes& types) {
  if (auto it = Forms().find(proto.op_type()); it != Forms().end())
    return FormAsQdq(graph, proto, it->second, writer, types);
  if (proto.op_type() == "QLinearConcat") return ConcatAsQdq(graph, proto, writer, types);
  if (proto.op_type() == "QGemm") return GemmAsQdq(graph, proto, writer, types);
  return QdqOpAsDefault(graph, proto, writer, types);
}

}  // namespace onnxfuse
